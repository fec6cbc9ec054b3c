// The Worker bundle's stand-in for the `debug` package (see [alias] in wrangler.toml). Only
// file-type's zip reader (@tokenizer/inflate) imports it, to log its steps when a DEBUG
// switch names it; a deployed Worker sets none, so its lines went nowhere, and the package
// was 6.6 KB of the entry module.
export default function createDebug(_namespace: string): (...args: unknown[]) => void {
  return () => {};
}
