// Peer: PostGraphile v5 (Amber preset, schema from the database pg-load.mjs filled) served by
// grafserv on Node's http server: node postgraphile.mjs --port N --database URL
//
// The pool keeps its connections (idleTimeoutMillis 0) so that the benchmark can count the
// PostgreSQL backends' CPU time over a run; its size is node-postgres's default (10).

import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { postgraphile } from "postgraphile";
import { makePgService } from "postgraphile/adaptors/pg";
import { grafserv } from "postgraphile/grafserv/node";
import { PostGraphileAmberPreset } from "postgraphile/presets/amber";

const { values: args } = parseArgs({
  options: { port: { type: "string" }, database: { type: "string" } },
});
const port = Number(args.port);

const preset = {
  extends: [PostGraphileAmberPreset],
  pgServices: [
    makePgService({
      connectionString: args.database,
      schemas: ["public"],
      poolConfig: { idleTimeoutMillis: 0 },
    }),
  ],
  grafserv: { host: "127.0.0.1", port, graphiql: false, watch: false },
  grafast: { explain: false },
};

const pgl = postgraphile(preset);
const serv = pgl.createServ(grafserv);
const server = createServer();
server.on("error", (error) => {
  console.error(error);
  process.exit(1);
});
await serv.addTo(server);
server.listen(port, "127.0.0.1");

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    server.close();
    pgl.release().then(() => process.exit(0));
  });
}
