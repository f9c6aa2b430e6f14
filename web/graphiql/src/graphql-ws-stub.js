// GraphiQL's fetcher imports graphql-ws only for subscriptions over WebSocket, which LeadGreen
// does not serve: the bundle carries this stub instead.
export function createClient() {
  throw new Error('subscriptions are not supported');
}
