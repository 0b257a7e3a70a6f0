/**
 * The Host and Origin rules of the HTTP API (docs/decisions/0025-who-may-call-the-headless-api.md), pure: how a
 * Host header, an Origin and a `--rpccorsdomain` pattern are read and matched. src/api/access.ts applies them.
 */

/** A host as a Host header or an origin writes it: the name as browsers write it (lowercase, IPv6 in brackets), and the port if written. */
export type Authority = { hostname: string; port: number | undefined }

const AUTHORITY = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(?::(\d{1,5}))?$/

/** `name`, `name:port`, `[v6]:port`; anything else (user info, a path, spaces) is undefined. */
export function parseAuthority(value: string): Authority | undefined {
  const m = AUTHORITY.exec(value)
  if (!m) return undefined
  const port = m[2] === undefined ? undefined : Number(m[2])
  if (port !== undefined && port > 65535) return undefined
  try {
    // The URL parser writes the name as a browser does: lowercase, IPv6 compressed, IPv4 as four decimals.
    return { hostname: new URL(`http://${m[1]}`).hostname, port }
  } catch {
    return undefined
  }
}

/** A name `--api-host` adds: with the listening port unless it gives one; `*` answers any Host. */
export type HostRule = '*' | Authority

export function parseHostRule(value: string): HostRule | undefined {
  return value === '*' ? '*' : parseAuthority(value)
}

const defaultPort: Record<string, number> = { http: 80, https: 443, ws: 80, wss: 443 }

/** An origin as one string, as browsers serialise it (`http://localhost:5173`, the default port left out), or `null`. */
export function parseOrigin(value: string): string | undefined {
  if (value === 'null') return 'null'
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/.exec(value)
  const authority = m ? parseAuthority(m[2]!) : undefined
  if (!m || !authority) return undefined
  return serialiseOrigin(m[1]!.toLowerCase(), authority)
}

function serialiseOrigin(scheme: string, { hostname, port }: Authority): string {
  return `${scheme}://${hostname}${port === undefined || port === defaultPort[scheme] ? '' : `:${port}`}`
}

/** An origin `--rpccorsdomain` allows: exact, with `*` wildcards (any characters), `*` alone (any origin but `null`), or `null`. */
export type OriginPattern = { source: string; matches(origin: string): boolean }

const WILDCARD_AUTHORITY = /^(\[[0-9A-Fa-f:.*]+\]|[A-Za-z0-9_.*-]+)(?::(\d{1,5}|\*))?$/

/** A `--rpccorsdomain` entry. Raiden's form with a trailing path (`http://localhost:*\/*`) is accepted; the path is ignored. */
export function parseOriginPattern(raw: string): OriginPattern | undefined {
  if (raw === 'null') return { source: raw, matches: (origin) => origin === 'null' }
  if (raw === '*') return { source: raw, matches: (origin) => origin !== 'null' }
  const text = /^[^/]*:\/\/[^/]+\/\*$/.test(raw) ? raw.slice(0, -2) : raw
  if (!text.includes('*')) {
    const origin = parseOrigin(text)
    return origin && origin !== 'null' ? { source: raw, matches: (o) => o === origin } : undefined
  }
  const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/(.*)$/.exec(text)
  const authority = m ? WILDCARD_AUTHORITY.exec(m[2]!) : null
  if (!m || !authority) return undefined
  const scheme = m[1]!.toLowerCase()
  // Written as an origin is (its scheme's default port left out) and matched against a well-formed origin, so `*`
  // can only stand for what an origin may hold there.
  const port = authority[2] === undefined || Number(authority[2]) === defaultPort[scheme] ? '' : `:${authority[2]}`
  const written = `${scheme}://${authority[1]!.toLowerCase()}${port}`
  const pattern = new RegExp(`^${written.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replaceAll('*', '.*')}$`)
  return { source: raw, matches: (origin) => origin !== 'null' && pattern.test(origin) }
}

/** Whether a pattern lets every web site in (`*`, `http://*`, `https://*:*`): refused without a token. */
export function allowsEveryOrigin(pattern: OriginPattern): boolean {
  return pattern.source === '*' || /^[A-Za-z][A-Za-z0-9+.-]*:\/\/\*(:\*)?(\/\*)?$/.test(pattern.source)
}

/** What a Host header is checked against. */
export type HostRules = {
  /** The address the server is bound to, as `--api` gives it (`127.0.0.1`, `::1`, `0.0.0.0`, a name). */
  boundHost: string
  /** The port it listens on: the one the OS gave when 0 was asked. */
  port: number
  /** Names answered beyond the bound address, localhost, 127.0.0.1 and [::1] (`--api-host`); `*` is any. */
  hosts: readonly HostRule[]
}

/** Whether `host` (a Host header) names this node: `rules` beside the bound address and loopback, with the listening port. */
export function hostAllowed(host: string | undefined, { boundHost, port, hosts }: HostRules): boolean {
  const authority = host === undefined ? undefined : parseAuthority(host)
  if (!authority) return false
  // A browser leaves out the port only when it is http's default.
  const asked = authority.port ?? 80
  const bound = parseAuthority(boundHost.includes(':') ? `[${boundHost}]` : boundHost)?.hostname
  const names = ['localhost', '127.0.0.1', '[::1]', ...(bound ? [bound] : [])]
  if (names.includes(authority.hostname) && asked === port) return true
  return hosts.some((rule) => rule === '*' || (rule.hostname === authority.hostname && asked === (rule.port ?? port)))
}

/** The node's own origin for a request: `http://<Host>`. */
function ownOrigin(host: string | undefined): string | undefined {
  const authority = host === undefined ? undefined : parseAuthority(host)
  return authority && serialiseOrigin('http', authority)
}

/** The answer to a request a page may not make: why, and the flag that would allow it. */
export type Refusal = { status: 403; code: 'FORBIDDEN_HOST' | 'FORBIDDEN_ORIGIN'; message: string }

/**
 * What `checkAccess` decides for a request's Host, Origin and Sec-Fetch-Site, before any token: a refusal, `cors`
 * (an allowed page of another origin: answer with CORS headers, and its preflight), or `ok`.
 */
export function accessDecision(
  headers: { host?: string | undefined; origin?: string | undefined; secFetchSite?: string | undefined },
  access: HostRules & { corsOrigins: readonly OriginPattern[] },
): Refusal | 'cors' | 'ok' {
  if (!hostAllowed(headers.host, access)) {
    const name = (headers.host === undefined ? undefined : parseAuthority(headers.host))?.hostname
    return {
      status: 403,
      code: 'FORBIDDEN_HOST',
      message:
        headers.host === undefined
          ? 'a request without a Host header is refused'
          : `Host ${JSON.stringify(headers.host)} is not a name this node answers to (a page of another site reaching it by DNS rebinding?); start it with --api-host ${name ?? 'NAME'} to answer it`,
    }
  }
  const { origin } = headers
  const site = headers.secFetchSite?.toLowerCase()
  // A page of another site started it (Sec-Fetch-Site): a navigation, an <img>, a form, a fetch.
  const anotherSite = site === 'cross-site' || site === 'same-site'
  if (origin !== undefined) {
    const canonical = parseOrigin(origin)
    if (canonical !== undefined && !anotherSite && canonical === ownOrigin(headers.host)) return 'ok'
    if (canonical !== undefined && access.corsOrigins.some((p) => p.matches(canonical))) return 'cors'
    return {
      status: 403,
      code: 'FORBIDDEN_ORIGIN',
      message: `a page of ${origin} may not call this node; start it with --rpccorsdomain ${canonical ?? 'ORIGIN'} to allow that origin`,
    }
  }
  if (anotherSite)
    return {
      status: 403,
      code: 'FORBIDDEN_ORIGIN',
      message: `another site's page started this request (Sec-Fetch-Site: ${site}) and it carries no Origin that --rpccorsdomain allows`,
    }
  return 'ok'
}
