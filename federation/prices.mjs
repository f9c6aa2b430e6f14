// The federation test's second subgraph: an hourly price for each GPU type, joined to
// LeadGreen's `Gpu` by its `name` key. Prices are the test's own figures, not market data.
// Usage: node prices.mjs  (prints "ready <url>" once it listens on 127.0.0.1, a free port)
import { ApolloServer } from "@apollo/server";
import { startStandaloneServer } from "@apollo/server/standalone";
import { buildSubgraphSchema } from "@apollo/subgraph";
import { gql } from "graphql-tag";

export const PRICES = { H100: 2.5, B200: 6.25 };

const typeDefs = gql`
  extend schema @link(url: "https://specs.apollo.dev/federation/v2.9", import: ["@key"])

  type Gpu @key(fields: "name") {
    name: String!
    "Rental price of one GPU of this type an hour, in US dollars (the test's figures)."
    priceUsdPerHour: Float
  }
`;

const resolvers = {
  Gpu: {
    __resolveReference: ({ name }) => ({ name, priceUsdPerHour: PRICES[name] ?? null }),
  },
};

const server = new ApolloServer({ schema: buildSubgraphSchema([{ typeDefs, resolvers }]) });
const { url } = await startStandaloneServer(server, { listen: { host: "127.0.0.1", port: 0 } });
console.log(`ready ${url}`);
