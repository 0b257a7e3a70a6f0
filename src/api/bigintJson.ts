// How the API writes JSON: bigints (amounts, identifiers, block numbers) as decimal strings. No imports: the page's
// client (worker/nodeClient.ts) writes its bodies with it too, and must not pull in the API's modules.

/** JSON.stringify's replacer that writes a bigint as its decimal string. */
export const bigintAsDecimal = (_key: string, value: unknown): unknown => (typeof value === 'bigint' ? value.toString() : value)

/** `value` as JSON text, its bigints as decimal strings. */
export function stringify(value: unknown): string {
  return JSON.stringify(value, bigintAsDecimal)
}
