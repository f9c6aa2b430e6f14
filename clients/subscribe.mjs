// Subscribes to a LeadGreen server with a real client and prints what it gets, one JSON line
// each: {"ready": true, "at": ms} once the subscription runs, then {"event": payload, "at": ms}
// for each event, until `count` events (then exit 0) or an error (exit 1).
//
//   node clients/subscribe.mjs sse|sse-single|ws URL COUNT [QUERY]
//
// sse: the graphql-sse client (distinct connections mode: POST, Accept: text/event-stream),
//      ready when the stream's response arrives;
// sse-single: the graphql-sse client in single connection mode (a PUT's reservation, its
//      stream, the subscription POSTed with the token), ready when that POST is accepted (202);
// ws:  the graphql-ws client (graphql-transport-ws), ready when a query sent after the
//      subscription on the same connection is answered (operations start in order).
import { createClient as sseClient } from "graphql-sse";
import { createClient as wsClient } from "graphql-ws";
import WebSocket from "ws";

const [protocol, url, countText, given] = process.argv.slice(2);
const count = Number(countText);
const query =
  given ??
  `subscription Published { releasePublished {
     release { id number lastUpdated digest } previous { id number lastUpdated digest }
     changes { from to filesAdded filesRemoved
       tasks { task unchanged changed { newRow fields { field old new } } } } } }`;
const say = (value) => process.stdout.write(JSON.stringify({ ...value, at: Date.now() }) + "\n");

let client;
if (protocol === "sse") {
  client = sseClient({
    url,
    retryAttempts: 0,
    fetchFn: async (...args) => {
      const response = await fetch(...args);
      if (response.ok) say({ ready: true });
      return response;
    },
  });
} else if (protocol === "sse-single") {
  client = sseClient({
    url,
    singleConnection: true,
    retryAttempts: 0,
    fetchFn: async (input, init) => {
      const response = await fetch(input, init);
      if (init?.method === "POST" && response.status === 202) say({ ready: true });
      return response;
    },
  });
} else if (protocol === "ws") {
  client = wsClient({ url, webSocketImpl: WebSocket, retryAttempts: 0, lazy: false });
} else {
  console.error(`unknown protocol ${protocol}: sse or ws`);
  process.exit(2);
}

try {
  const events = client.iterate({ query });
  const first = events.next();
  if (protocol === "ws") {
    for await (const _ of client.iterate({ query: "query Ready { releases { number } }" })) {
      say({ ready: true });
    }
  }
  let got = 0;
  let next = await first;
  while (!next.done) {
    say({ event: next.value });
    if (++got >= count) break;
    next = await events.next();
  }
  await events.return?.();
  client.dispose();
  process.exit(0);
} catch (error) {
  console.error(error instanceof Error ? error.stack : JSON.stringify(error));
  process.exit(1);
}
