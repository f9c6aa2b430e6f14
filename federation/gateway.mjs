// The federation test's gateway: Apollo Gateway composing the subgraphs it introspects
// (IntrospectAndCompose: each subgraph's `_service { sdl }`), served on 127.0.0.1.
// Usage: node gateway.mjs NAME=URL...  (prints "ready <url>" once composed and listening)
import { ApolloGateway, IntrospectAndCompose } from "@apollo/gateway";
import { ApolloServer } from "@apollo/server";
import { startStandaloneServer } from "@apollo/server/standalone";

const subgraphs = process.argv.slice(2).map((arg) => {
  const at = arg.indexOf("=");
  return { name: arg.slice(0, at), url: arg.slice(at + 1) };
});
const gateway = new ApolloGateway({ supergraphSdl: new IntrospectAndCompose({ subgraphs }) });
const server = new ApolloServer({ gateway });
const { url } = await startStandaloneServer(server, { listen: { host: "127.0.0.1", port: 0 } });
console.log(`ready ${url}`);
