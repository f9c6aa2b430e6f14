// PostGraphile's loader: creates the schema in an empty PostgreSQL database and fills it from
// a snapshot directory and the seed (through data.mjs, the same reading as the Mercurius peer).
// node pg-load.mjs --database postgres://USER@HOST:PORT/NAME --snapshot DIR --seed FILE
//
// Tables: releases, sources, gpus, models, curves (a model's concurrency series) and
// configurations (lm-arena-chat rows, each in one curve), with the foreign keys and indexes
// PostGraphile turns into modelBySlug { configurationsByModelId, curvesByModelId {
// configurationsByCurveId } }. Computed: power_per_gpu_watts (a generated column),
// fractionOfTdp (configurations_fraction_of_tdp) and power (models_power, per GPU type: min,
// median and max of total and per-GPU power and of the fraction of TDP, with the GPU's facts).

import { parseArgs } from "node:util";
import pg from "pg";
import { load, TASK } from "./data.mjs";

const { values: args } = parseArgs({
  options: { database: { type: "string" }, snapshot: { type: "string" }, seed: { type: "string" } },
});

const SCHEMA = `
create table releases (
  id int primary key,
  last_updated text not null,
  upstream_commit text
);
create table sources (
  id int primary key,
  release_id int not null references releases (id),
  name text, publisher text, url text, data_url text, version text, released text,
  compiled text, compiled_evidence text, retrieved text, licence text,
  licence_evidence text[], workload text, method text, selection text, cite text,
  cite_url text, used_for text, configurations text
);
create index on sources (release_id);
create table gpus (
  name text primary key,
  full_name text, architecture text, memory_gb float8, tdp_watts float8,
  source text, source_url text
);
create table models (
  id int primary key,
  slug text not null unique,
  name text not null,
  model_id text not null unique,
  params_b float8 not null,
  active_params_b float8 not null,
  architecture text,
  weight_precision text,
  gpus text[],
  url text,
  page text
);
create table curves (
  id int primary key,
  model_id int not null references models (id),
  position int not null,
  task text not null,
  gpu_model text not null references gpus (name),
  num_gpus int not null,
  tensor_parallel int not null,
  data_parallel int not null,
  expert_parallel int not null
);
create index on curves (model_id, position);
create index on curves (gpu_model);
create table configurations (
  id int primary key, -- row of tasks/lm-arena-chat.json, from 0
  model_id int not null references models (id),
  curve_id int not null references curves (id),
  gpu_model text not null references gpus (name),
  num_gpus int not null,
  max_num_seqs int not null,
  tensor_parallel int not null,
  data_parallel int not null,
  expert_parallel int not null,
  parallel_notes text not null,
  energy_per_token_joules float8 not null,
  energy_per_request_joules float8 not null,
  median_itl_ms float8 not null,
  p90_itl_ms float8 not null,
  p95_itl_ms float8 not null,
  p99_itl_ms float8 not null,
  output_throughput_tokens_per_sec float8 not null,
  avg_power_watts float8 not null,
  power_per_gpu_watts float8 not null generated always as (avg_power_watts / num_gpus) stored,
  avg_batch_size float8 not null,
  avg_output_len float8 not null
);
create index on configurations (model_id, id);
create index on configurations (curve_id, max_num_seqs, id);
create index on configurations (gpu_model);

create function configurations_fraction_of_tdp(c configurations) returns float8
language sql stable as $$
  select c.power_per_gpu_watts / g.tdp_watts from gpus g where g.name = c.gpu_model
$$;

create type spread as (minimum float8, median float8, maximum float8);
create type gpu_facts as (full_name text, tdp_watts float8, source text, source_url text);
create type gpu_power as (
  gpu_model text,
  configurations int,
  total_watts spread,
  per_gpu_watts spread,
  fraction_of_tdp spread,
  gpu gpu_facts
);
create function models_power(m models) returns setof gpu_power
language sql stable as $$
  select c.gpu_model, count(*)::int,
    row(min(c.avg_power_watts),
        percentile_cont(0.5) within group (order by c.avg_power_watts),
        max(c.avg_power_watts))::spread,
    row(min(c.power_per_gpu_watts),
        percentile_cont(0.5) within group (order by c.power_per_gpu_watts),
        max(c.power_per_gpu_watts))::spread,
    case when g.tdp_watts > 0 then
      row(min(c.power_per_gpu_watts / g.tdp_watts),
          percentile_cont(0.5) within group (order by c.power_per_gpu_watts / g.tdp_watts),
          max(c.power_per_gpu_watts / g.tdp_watts))::spread
    end,
    row(g.full_name, g.tdp_watts, g.source, g.source_url)::gpu_facts
  from configurations c join gpus g on g.name = c.gpu_model
  where c.model_id = m.id
  group by c.gpu_model, g.name
  order by c.gpu_model collate "C"
$$;
`;

const data = load(args.snapshot, args.seed);
const client = new pg.Client({ connectionString: args.database });
await client.connect();

async function insert(table, rows) {
  if (rows.length === 0) return;
  const columns = Object.keys(rows[0]);
  const values = [];
  const tuples = rows.map((row) => {
    const places = columns.map((column) => {
      values.push(row[column]);
      return `$${values.length}`;
    });
    return `(${places.join(", ")})`;
  });
  await client.query(
    `insert into ${table} (${columns.join(", ")}) values ${tuples.join(", ")}`,
    values,
  );
}

try {
  await client.query("begin");
  await client.query(SCHEMA);
  const r = data.release;
  await insert("releases", [
    { id: 1, last_updated: r.lastUpdated, upstream_commit: r.upstreamCommit },
  ]);
  const s = data.source;
  await insert("sources", [
    {
      id: 1,
      release_id: 1,
      name: s.name,
      publisher: s.publisher,
      url: s.url,
      data_url: s.dataUrl,
      version: s.version,
      released: s.released,
      compiled: s.compiled,
      compiled_evidence: s.compiledEvidence,
      retrieved: s.retrieved,
      licence: s.licence,
      licence_evidence: s.licenceEvidence,
      workload: s.workload,
      method: s.method,
      selection: s.selection,
      cite: s.cite,
      cite_url: s.citeUrl,
      used_for: s.usedFor,
      configurations: s.configurations,
    },
  ]);
  await insert(
    "gpus",
    Object.values(data.gpus).map((g) => ({
      name: g.name,
      full_name: g.fullName,
      architecture: g.architecture,
      memory_gb: g.memoryGb,
      tdp_watts: g.tdpWatts,
      source: g.source,
      source_url: g.sourceUrl,
    })),
  );
  const gpuNames = new Set(Object.keys(data.gpus));
  const unknown = data.models
    .flatMap((m) => m.configurations.map((c) => c.gpuModel))
    .filter((name) => !gpuNames.has(name));
  await insert(
    "gpus",
    [...new Set(unknown)].map((name) => ({ name })),
  );
  await insert(
    "models",
    data.models.map((m, i) => ({
      id: i + 1,
      slug: m.slug,
      name: m.name,
      model_id: m.modelId,
      params_b: m.paramsB,
      active_params_b: m.activeParamsB,
      architecture: m.architecture,
      weight_precision: m.weightPrecision,
      gpus: m.gpus,
      url: m.url,
      page: m.page,
    })),
  );
  const curves = [];
  const configurations = [];
  data.models.forEach((m, i) => {
    for (const curve of m.curves) {
      const id = curves.length + 1;
      curves.push({
        id,
        model_id: i + 1,
        position: curve.position,
        task: TASK,
        gpu_model: curve.gpuModel,
        num_gpus: curve.numGpus,
        tensor_parallel: curve.tensorParallel,
        data_parallel: curve.dataParallel,
        expert_parallel: curve.expertParallel,
      });
      for (const c of curve.points) {
        configurations.push({
          id: c.taskRow,
          model_id: i + 1,
          curve_id: id,
          gpu_model: c.gpuModel,
          num_gpus: c.numGpus,
          max_num_seqs: c.maxNumSeqs,
          tensor_parallel: c.tensorParallel,
          data_parallel: c.dataParallel,
          expert_parallel: c.expertParallel,
          parallel_notes: c.parallelNotes,
          energy_per_token_joules: c.energyPerTokenJoules,
          energy_per_request_joules: c.energyPerRequestJoules,
          median_itl_ms: c.medianItlMs,
          p90_itl_ms: c.p90ItlMs,
          p95_itl_ms: c.p95ItlMs,
          p99_itl_ms: c.p99ItlMs,
          output_throughput_tokens_per_sec: c.outputThroughputTokensPerSec,
          avg_power_watts: c.avgPowerWatts,
          avg_batch_size: c.avgBatchSize,
          avg_output_len: c.avgOutputLen,
        });
      }
    }
  });
  await insert("curves", curves);
  for (let i = 0; i < configurations.length; i += 500) {
    await insert("configurations", configurations.slice(i, i + 500));
  }
  await client.query("commit");
  await client.query("analyze");
  console.log(
    `loaded ${data.models.length} models, ${curves.length} curves, ` +
      `${configurations.length} configurations`,
  );
} finally {
  await client.end();
}
