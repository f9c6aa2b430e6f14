// Peer: Fastify + Mercurius with graphql-jit (every query compiled on its first use), the
// model pages' data held in memory. It answers LeadGreen's own model-page query text (same
// field names and arguments): node mercurius.mjs --port N --snapshot DIR --seed FILE

import { parseArgs } from "node:util";
import Fastify from "fastify";
import mercurius from "mercurius";
import { load } from "./data.mjs";

const { values: args } = parseArgs({
  options: { port: { type: "string" }, snapshot: { type: "string" }, seed: { type: "string" } },
});
const data = load(args.snapshot, args.seed);

const schema = `
  type Query {
    model(slug: String!, release: Int): Model
    source(release: Int): Source
  }
  type Model {
    slug: String!
    name: String!
    modelId: String!
    paramsB: Float!
    activeParamsB: Float!
    architecture: String
    weightPrecision: String
    gpus: [String!]
    url: String
    page: String
    configurations: [Configuration!]!
    curves: [CurveSeries!]!
    power: [GpuPower!]!
  }
  type Configuration {
    id: ID!
    gpuModel: String!
    numGpus: Int!
    maxNumSeqs: Int!
    tensorParallel: Int!
    dataParallel: Int!
    expertParallel: Int!
    parallelNotes: String!
    energyPerTokenJoules: Float!
    energyPerRequestJoules: Float!
    medianItlMs: Float!
    p90ItlMs: Float!
    p95ItlMs: Float!
    p99ItlMs: Float!
    outputThroughputTokensPerSec: Float!
    avgPowerWatts: Float!
    powerPerGpuWatts: Float!
    fractionOfTdp: Float
    avgBatchSize: Float!
    avgOutputLen: Float!
  }
  type CurveSeries {
    task: String!
    gpuModel: String!
    numGpus: Int!
    tensorParallel: Int!
    dataParallel: Int!
    expertParallel: Int!
    points: [Configuration!]!
  }
  type Spread { minimum: Float! median: Float! maximum: Float! }
  type Gpu {
    name: String!
    fullName: String
    architecture: String
    memoryGb: Float
    tdpWatts: Float
    source: String
    sourceUrl: String
  }
  type GpuPower {
    gpuModel: String!
    configurations: Int!
    totalWatts: Spread!
    perGpuWatts: Spread!
    fractionOfTdp: Spread
    gpu: Gpu
  }
  type Release { lastUpdated: String! upstreamCommit: String }
  type Source {
    name: String
    publisher: String
    url: String
    dataUrl: String
    version: String
    released: String
    compiled: String
    compiledEvidence: String
    retrieved: String
    licence: String
    licenceEvidence: [String!]
    workload: String
    method: String
    selection: String
    cite: String
    citeUrl: String
    usedFor: String
    configurations: String
    release: Release!
  }
`;

// One release here: release 1 (or none given) is the loaded snapshot.
const ours = (release) => release == null || release === 1;

const resolvers = {
  Query: {
    model: (_, { slug, release }) => (ours(release) ? (data.bySlug.get(slug) ?? null) : null),
    source: (_, { release }) => (ours(release) ? data.source : null),
  },
};

const app = Fastify({ logger: false });
app.register(mercurius, { schema, resolvers, jit: 1, graphiql: false });
await app.listen({ host: "127.0.0.1", port: Number(args.port) });

for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => app.close().then(() => process.exit(0)));
}
