import { type Client, gql } from '@urql/core';

export interface TaskChoice {
  name: string;
  displayName: string;
  architecture: string | null;
}

export interface PlanChoices {
  tasks: TaskChoice[];
  models: { slug: string; name: string; tasks: { task: string }[] }[];
  source: { name: string; licence: string; release: { lastUpdated: string } };
}

// What the form offers: the tasks, and each model with the tasks it was measured on.
export const PLAN_CHOICES = gql<PlanChoices, Record<string, never>>`
  query PlanChoices {
    tasks { name displayName architecture }
    models { slug name tasks { task } }
    source { name licence release { lastUpdated } }
  }
`;

export interface Bounds {
  lower: number;
  upper: number;
}

export interface Plan {
  rank: number;
  paretoOptimal: boolean;
  latency: number;
  replicas: number;
  gpuCount: number;
  powerWatts: Bounds;
  energyPerDayKwh: Bounds;
  energyPerRequestJoules: number;
  carbonPerDayKg: Bounds | null;
  costPerDay: number | null;
  configuration: {
    id: string;
    gpuModel: string;
    numGpus: number;
    model: { slug: string; name: string };
    maxNumSeqs?: number;
    batchSize?: number;
  };
}

export interface DeploymentPlans {
  deploymentPlan: {
    demandUnit: string;
    candidates: number;
    totalCount: number;
    excluded: { limit: string; configurations: number }[];
    reason: string | null;
    plans: Plan[];
    assumptions: string[];
    method: string[];
  };
}

export interface PlanVariables {
  task: string;
  models: string[] | null;
  demand: Record<string, number>;
  latency: Record<string, number | string> | null;
  utilization: number;
  objective: string;
  site: Record<string, number>;
  first: number;
}

// Every plan of the task in one page: `first` up to the standard profile's max_page_size
// (1,000), which holds the largest task's 638 configurations.
export const WHOLE_TASK = 1000;

export const DEPLOYMENT_PLANS = gql<DeploymentPlans, PlanVariables>`
  query PlanExplorer(
    $task: String!
    $models: [String!]
    $demand: DemandInput!
    $latency: LatencyInput
    $utilization: Float
    $objective: PlanObjective
    $site: SiteInput
    $first: Int
  ) {
    deploymentPlan(
      task: $task
      models: $models
      demand: $demand
      latency: $latency
      utilization: $utilization
      objective: $objective
      site: $site
      first: $first
    ) {
      demandUnit candidates totalCount reason
      excluded { limit configurations }
      plans {
        rank paretoOptimal latency replicas gpuCount
        powerWatts { lower upper } energyPerDayKwh { lower upper } energyPerRequestJoules
        carbonPerDayKg { lower upper } costPerDay
        configuration {
          id gpuModel numGpus model { slug name }
          ... on Configuration { maxNumSeqs }
          ... on DiffusionConfiguration { batchSize }
        }
      }
      assumptions method
    }
  }
`;

export async function fetchChoices(client: Client): Promise<PlanChoices> {
  const result = await client.query(PLAN_CHOICES, {}).toPromise();
  if (result.error) throw result.error;
  if (!result.data) throw new Error('the API answered without data');
  return result.data;
}

export async function fetchPlans(client: Client, variables: PlanVariables): Promise<DeploymentPlans['deploymentPlan']> {
  const result = await client.query(DEPLOYMENT_PLANS, variables).toPromise();
  if (result.error) throw result.error;
  if (!result.data) throw new Error('the API answered without data');
  return result.data.deploymentPlan;
}
