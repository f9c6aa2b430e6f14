import { Client, fetchExchange, gql } from '@urql/core';

export interface CurvePoint {
  maxNumSeqs: number;
  energyPerTokenJoules: number;
  medianItlMs: number;
}

export interface Curve {
  gpuModel: string;
  numGpus: number;
  points: CurvePoint[];
}

export interface FrontierConfiguration extends CurvePoint {
  gpuModel: string;
  numGpus: number;
}

export interface ModelCurves {
  model: { slug: string; name: string; curves: Curve[] } | null;
  paretoFrontier: { candidates: number; configurations: FrontierConfiguration[] }[];
  source: { name: string; licence: string; release: { lastUpdated: string } };
}

// One request for both: the model's concurrency curves and its own Pareto frontier.
export const MODEL_CURVES = gql<ModelCurves, { slug: string }>`
  query ModelCurves($slug: String!) {
    model(slug: $slug) {
      slug
      name
      curves {
        gpuModel
        numGpus
        points { maxNumSeqs energyPerTokenJoules medianItlMs }
      }
    }
    paretoFrontier(task: "lm-arena-chat", scope: MODEL, models: [$slug]) {
      candidates
      configurations { gpuModel numGpus maxNumSeqs medianItlMs energyPerTokenJoules }
    }
    source { name licence release { lastUpdated } }
  }
`;

// The API's GraphQL endpoint from its base URL (`http://127.0.0.1:8000` or `.../graphql`).
export function endpoint(api: string): string {
  const url = new URL(api);
  if (!/\/graphql\/?$/.test(url.pathname)) url.pathname = url.pathname.replace(/\/?$/, '/graphql');
  return url.href;
}

export function createClient(api: string): Client {
  return new Client({
    url: endpoint(api),
    exchanges: [fetchExchange],
    // POST with a JSON body: a cross-origin request with a CORS preflight, as most clients send.
    preferGetMethod: false,
    requestPolicy: 'network-only',
  });
}

export async function fetchModelCurves(client: Client, slug: string): Promise<ModelCurves> {
  const result = await client.query(MODEL_CURVES, { slug }).toPromise();
  if (result.error) throw result.error;
  if (!result.data) throw new Error('the API answered without data');
  if (!result.data.model) throw new Error(`no model "${slug}" in this API's data`);
  return result.data;
}
