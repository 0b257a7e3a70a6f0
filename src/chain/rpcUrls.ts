// The chain's endpoints as the operator gives them: which URLs are endpoints, and how one is shown. No imports, so that
// the page's startNode can check its options without loading the transport.

/** Whether `raw` is an endpoint the node can use: an http, https, ws or wss URL with a host. */
export function isRpcUrl(raw: string): boolean {
  try {
    const url = new URL(raw)
    return ['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol) && url.hostname !== ''
  } catch {
    return false
  }
}

/**
 * The endpoints an option gives, in order: one URL, several separated by commas, or a list; undefined when it is none
 * of those or one of them is no endpoint URL (isRpcUrl).
 */
export function parseRpcUrls(value: unknown): string[] | undefined {
  const items = typeof value === 'string' ? value.split(',').map((u) => u.trim()) : Array.isArray(value) ? (value as unknown[]) : undefined
  if (!items || items.length === 0) return undefined
  return items.every((u): u is string => typeof u === 'string' && isRpcUrl(u)) ? items : undefined
}

/** Scheme, host and port only: an endpoint's path and query often hold its API key. */
export function endpointLabel(url: string): string {
  try {
    const u = new URL(url)
    return `${u.protocol}//${u.host}${u.pathname && u.pathname !== '/' ? '/…' : ''}`
  } catch {
    return 'an endpoint'
  }
}
