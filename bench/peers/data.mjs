// The peers' loader: the model pages' data from a snapshot directory (upstream layout) and the
// LeadGreen v1 seed manifest, read the way LeadGreen reads them (bench/peers_compare.py).
//
// Models are the manifest's (slug, name, paramsB, activeParamsB, gpus, url, page) with
// architecture and weight precision from the snapshot's index.json. Configurations are the
// rows of tasks/lm-arena-chat.json in file order, checked against the per-model file
// (models/{org}__{name}__lm-arena-chat.json), whose `parallelization` is authoritative.
// Power per GPU = average power ÷ number of GPUs; fraction of TDP = power per GPU ÷ the GPU's
// TDP (the reference facts below mirror LeadGreen's db/gpus.py).

import { readFileSync } from "node:fs";
import { join } from "node:path";

export const TASK = "lm-arena-chat";

export const GPUS = {
  H100: {
    name: "H100",
    fullName: "NVIDIA H100 SXM5 80GB HBM3",
    architecture: "Hopper",
    memoryGb: 80.0,
    tdpWatts: 700.0,
    source:
      "NVIDIA H100 Tensor Core GPU datasheet: SXM form factor, 80 GB HBM3, " +
      "max thermal design power up to 700 W",
    sourceUrl: "https://www.nvidia.com/en-us/data-center/h100/",
  },
  B200: {
    name: "B200",
    fullName: "NVIDIA B200 (HGX B200, SXM)",
    architecture: "Blackwell",
    memoryGb: 180.0,
    tdpWatts: 1000.0,
    source:
      "NVIDIA HGX B200 specifications: 8 GPUs with 1,440 GB HBM3e in total " +
      "(180 GB each), up to 1,000 W per GPU",
    sourceUrl: "https://www.nvidia.com/en-us/data-center/hgx/",
  },
};

const readJson = (path) => JSON.parse(readFileSync(path, "utf8"));

export const modelFileName = (modelId, task) => `${modelId.replaceAll("/", "__")}__${task}.json`;

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

const spread = (values) => ({
  minimum: Math.min(...values),
  median: median(values),
  maximum: Math.max(...values),
});

// One series per (GPU, number of GPUs, parallelism), points by max_num_seqs then row.
function curves(configurations) {
  const groups = new Map();
  for (const c of configurations) {
    const key = [c.gpuModel, c.numGpus, c.tensorParallel, c.dataParallel, c.expertParallel];
    const id = key.join("|");
    if (!groups.has(id)) groups.set(id, { key, points: [] });
    groups.get(id).points.push(c);
  }
  const order = (a, b) => {
    for (let i = 0; i < a.length; i++) {
      if (a[i] < b[i]) return -1;
      if (a[i] > b[i]) return 1;
    }
    return 0;
  };
  return [...groups.values()]
    .sort((a, b) => order(a.key, b.key))
    .map(({ key, points }, position) => ({
      position,
      task: TASK,
      gpuModel: key[0],
      numGpus: key[1],
      tensorParallel: key[2],
      dataParallel: key[3],
      expertParallel: key[4],
      points: points.sort((a, b) => a.maxNumSeqs - b.maxNumSeqs || a.taskRow - b.taskRow),
    }));
}

function power(configurations) {
  const byGpu = new Map();
  for (const c of configurations) {
    if (!byGpu.has(c.gpuModel)) byGpu.set(c.gpuModel, []);
    byGpu.get(c.gpuModel).push(c);
  }
  return [...byGpu.keys()].sort().map((gpuModel) => {
    const members = byGpu.get(gpuModel);
    const gpu = GPUS[gpuModel] ?? null;
    const perGpu = members.map((c) => c.powerPerGpuWatts);
    return {
      gpuModel,
      configurations: members.length,
      totalWatts: spread(members.map((c) => c.avgPowerWatts)),
      perGpuWatts: spread(perGpu),
      fractionOfTdp: gpu ? spread(perGpu.map((w) => w / gpu.tdpWatts)) : null,
      gpu,
    };
  });
}

// Everything the model page needs: { models, bySlug, source, release, gpus }.
export function load(snapshot, seedPath) {
  const seed = readJson(seedPath);
  const index = readJson(join(snapshot, "index.json"));
  const rows = readJson(join(snapshot, "tasks", `${TASK}.json`)).configurations;
  const models = seed.models.map((entry, position) => {
    const facts = index.models[entry.model_id] ?? {};
    return {
      position,
      slug: entry.slug,
      name: entry.name,
      modelId: entry.model_id,
      paramsB: entry.params_b,
      activeParamsB: entry.active_params_b,
      architecture: null, // from the per-model file below
      weightPrecision: facts.weight_precision ?? null,
      gpus: entry.gpus,
      url: entry.url,
      page: entry.page,
      configurations: [],
    };
  });
  const byModelId = new Map(models.map((m) => [m.modelId, m]));
  rows.forEach((row, taskRow) => {
    const model = byModelId.get(row.model_id);
    if (!model) return; // a model the manifest does not list has no model page here
    const perGpu = row.avg_power_watts / row.num_gpus;
    const tdp = GPUS[row.gpu_model]?.tdpWatts;
    model.configurations.push({
      id: String(taskRow),
      taskRow,
      gpuModel: row.gpu_model,
      numGpus: row.num_gpus,
      maxNumSeqs: row.max_num_seqs,
      tensorParallel: row.tensor_parallel,
      dataParallel: row.data_parallel,
      expertParallel: row.expert_parallel,
      energyPerTokenJoules: row.energy_per_token_joules,
      energyPerRequestJoules: row.energy_per_request_joules,
      medianItlMs: row.median_itl_ms,
      p90ItlMs: row.p90_itl_ms,
      p95ItlMs: row.p95_itl_ms,
      p99ItlMs: row.p99_itl_ms,
      outputThroughputTokensPerSec: row.output_throughput_tokens_per_sec,
      avgPowerWatts: row.avg_power_watts,
      powerPerGpuWatts: perGpu,
      fractionOfTdp: tdp ? perGpu / tdp : null,
      avgBatchSize: row.avg_batch_size,
      avgOutputLen: row.avg_output_len,
    });
  });
  for (const model of models) {
    const file = readJson(join(snapshot, "models", modelFileName(model.modelId, TASK)));
    if (file.configurations.length !== model.configurations.length) {
      throw new Error(`${model.slug}: task file and model file disagree on the row count`);
    }
    model.architecture = file.architecture ?? null;
    file.configurations.forEach((row, i) => {
      const c = model.configurations[i];
      const p = row.parallelization;
      if (row.energy_per_token_joules !== c.energyPerTokenJoules || row.gpu_model !== c.gpuModel) {
        throw new Error(`${model.slug}: row ${i} of the model file is not the task file's`);
      }
      Object.assign(c, {
        tensorParallel: p.tensor_parallel,
        dataParallel: p.data_parallel,
        expertParallel: p.expert_parallel,
        parallelNotes: p.notes ?? "",
      });
    });
    model.curves = curves(model.configurations);
    model.power = power(model.configurations);
  }
  const s = seed.source;
  const release = { lastUpdated: index.last_updated, upstreamCommit: null };
  const source = {
    name: s.name,
    publisher: s.publisher,
    url: s.url,
    dataUrl: s.data_url,
    version: s.version,
    released: s.released,
    compiled: s.compiled,
    compiledEvidence: s.compiled_evidence,
    retrieved: s.retrieved,
    licence: s.licence,
    licenceEvidence: s.licence_evidence,
    workload: s.workload,
    method: s.method,
    selection: s.selection,
    cite: s.cite,
    citeUrl: s.cite_url,
    usedFor: s.used_for,
    configurations: s.configurations,
    release,
  };
  return { models, bySlug: new Map(models.map((m) => [m.slug, m])), source, release, gpus: GPUS };
}
