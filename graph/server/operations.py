"""Queries the product documents and ships: the model page is GraphiQL's default tab."""

MODEL_PAGE = """\
# The model page: one model's configurations, concurrency curves and measured
# GPU power, with the provenance and licence evidence of the data.
query ModelPage($slug: String! = "qwen-3-8b", $release: Int) {
  model(slug: $slug, release: $release) {
    slug name modelId paramsB activeParamsB architecture weightPrecision gpus url page
    configurations {
      id gpuModel numGpus maxNumSeqs tensorParallel dataParallel expertParallel
      energyPerTokenJoules energyPerRequestJoules medianItlMs p90ItlMs p95ItlMs p99ItlMs
      outputThroughputTokensPerSec avgPowerWatts powerPerGpuWatts fractionOfTdp
      avgBatchSize avgOutputLen
    }
    curves {
      task gpuModel numGpus tensorParallel dataParallel expertParallel
      points {
        maxNumSeqs energyPerTokenJoules energyPerRequestJoules medianItlMs p99ItlMs
        outputThroughputTokensPerSec avgPowerWatts avgBatchSize
      }
    }
    power {
      gpuModel configurations
      totalWatts { minimum median maximum }
      perGpuWatts { minimum median maximum }
      fractionOfTdp { minimum median maximum }
      gpu { fullName tdpWatts source sourceUrl }
    }
  }
  source(release: $release) {
    name publisher url dataUrl version compiled retrieved
    licence licenceEvidence method cite citeUrl
    release { lastUpdated upstreamCommit }
  }
}
"""
