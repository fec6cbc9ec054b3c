// autocannon ships no types; the load generator uses only its promise API.
declare module "autocannon" {
  const autocannon: (options: Record<string, unknown>) => Promise<Record<string, any>>;
  export default autocannon;
}
