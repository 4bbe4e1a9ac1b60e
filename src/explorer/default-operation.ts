/**
 * The operation both explorers (GraphiQL at /explorer, Apollo Sandbox at GET /graphql) open with:
 * the same `dispatchWorkflow` call as the curl example `npm start` prints for app `demo`.
 */
export const DEFAULT_DOCUMENT = `# Baton's GraphQL API. Every request carries your API token as
# "Authorization: Bearer <token>"; it may only touch the apps it is scoped to.
# Run this to dispatch a workflow for app "demo", then look it up with
#   query { workflow(appId: "demo", environment: "dev", id: "<the id>") { id name state } }

mutation DispatchWorkflow($input: DispatchWorkflowInput!) {
  dispatchWorkflow(input: $input) {
    id
  }
}
`;

export const DEFAULT_VARIABLES = {
  input: {
    appId: 'demo',
    environment: 'dev',
    name: 'Onboarding',
    input: '["ada@example.com"]',
    tag: 'email:ada@example.com',
  },
};

/** sessionStorage key both explorer pages keep the API token under (per browser tab, per origin). */
export const TOKEN_STORAGE_KEY = 'baton.apiToken';

/** JSON for a `<script>` block or an inline `<script type="application/json">`: no `</script>` breakout. */
export function jsonForHtml(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}
