import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  accessDecision,
  allowsEveryOrigin,
  hostAllowed,
  parseAuthority,
  parseHostRule,
  parseOrigin,
  parseOriginPattern,
  type HostRule,
  type OriginPattern,
} from '../../../src/api/hostsAndOrigins.ts'

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/)
/** A DNS name of one to four labels, not one the node answers to by default. */
const name = fc
  .array(label, { minLength: 1, maxLength: 4 })
  .map((labels) => labels.join('.'))
  // A last label of digits (or 0x...) makes the URL parser read an IPv4 address; an xn-- label is punycode, which
  // it decodes and refuses when invalid (no browser sends such a Host or Origin: refused, tested below).
  .filter((n) => n !== 'localhost' && !/(^|\.)(\d+|0x[0-9a-f]*)$/.test(n) && !/(^|\.)xn--/.test(n))
const port = fc.integer({ min: 1, max: 65535 })
/** The same text in random case: hosts and schemes are case-insensitive. */
const anyCase = (text: string) =>
  fc.array(fc.boolean(), { minLength: text.length, maxLength: text.length }).map((up) => [...text].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(''))
const loopbackName = fc.constantFrom('localhost', '127.0.0.1', '[::1]').chain(anyCase)

const rules = (listening: number, hosts: HostRule[] = []) => ({ boundHost: '127.0.0.1', port: listening, hosts })
const rule = (text: string) => parseHostRule(text) as HostRule
const pattern = (text: string) => parseOriginPattern(text) as OriginPattern

describe('Host', () => {
  it('the loopback names are answered, in any case, with the listening port only (none written is 80)', () => {
    fc.assert(
      fc.property(loopbackName, port, port, (host, listening, other) => {
        expect(hostAllowed(`${host}:${listening}`, rules(listening))).toBe(true)
        expect(hostAllowed(`${host}:${other}`, rules(listening))).toBe(other === listening)
        expect(hostAllowed(host, rules(listening))).toBe(listening === 80)
      }),
    )
  })

  it('any other name is refused whatever its port, until --api-host names it; * answers every Host', () => {
    fc.assert(
      fc.property(name, port, port, (host, listening, asked) => {
        const header = `${host}:${asked}`
        expect(hostAllowed(header, rules(listening))).toBe(false)
        expect(hostAllowed(header, rules(listening, [rule(host.toUpperCase())]))).toBe(asked === listening)
        expect(hostAllowed(header, rules(listening, [rule(`${host}:${asked}`)]))).toBe(true)
        expect(hostAllowed(header, rules(listening, ['*']))).toBe(true)
      }),
    )
  })

  it('a Host that merely contains an allowed name (user info, a suffix, a path, spaces) is refused', () => {
    fc.assert(
      fc.property(loopbackName, name, port, (allowed, evil, listening) => {
        for (const header of [
          `${allowed}:${listening}@${evil}`,
          `${evil}@${allowed}:${listening}`,
          `${allowed}.${evil}:${listening}`,
          `${allowed}:${listening}/x`,
          ` ${allowed}:${listening}`,
          `${allowed}:${listening}:${listening}`,
        ])
          expect(hostAllowed(header, rules(listening)), header).toBe(false)
      }),
    )
    expect(hostAllowed(undefined, rules(5001))).toBe(false)
    expect(hostAllowed('127.0.0.1:99999', rules(5001))).toBe(false)
  })

  it('the bound address is answered too, as a browser writes it', () => {
    expect(hostAllowed('[::]:5001', { boundHost: '::', port: 5001, hosts: [] })).toBe(true)
    expect(hostAllowed('192.168.1.5:5001', { boundHost: '192.168.1.5', port: 5001, hosts: [] })).toBe(true)
    expect(hostAllowed('node.lan:5001', { boundHost: 'Node.lan', port: 5001, hosts: [] })).toBe(true)
    expect(hostAllowed('node.lan:5001', rules(5001))).toBe(false)
  })
})

describe('Origin', () => {
  const scheme = fc.constantFrom('http', 'https', 'chrome-extension')
  /** A well-formed origin and its parts. */
  const origin = fc.record({ scheme, host: name, port: fc.option(port, { nil: undefined }) })
  const write = ({ scheme, host, port }: { scheme: string; host: string; port: number | undefined }) =>
    `${scheme}://${host}${port === undefined ? '' : `:${port}`}`

  it('reads an origin in any case, with its default port or none, as the same origin', () => {
    fc.assert(
      fc.property(
        origin.chain((o) => anyCase(write(o)).map((written) => [o, written] as const)),
        ([o, written]) => {
          expect(parseOrigin(written)).toBe(parseOrigin(write(o)))
          expect(parseOrigin(written)).toBe(write({ ...o, port: o.port === { http: 80, https: 443 }[o.scheme as 'http'] ? undefined : o.port }))
        },
      ),
    )
    expect(parseOrigin('http://localhost:80')).toBe('http://localhost')
    expect(parseOrigin('https://app.example:443')).toBe('https://app.example')
    expect(parseOrigin('https://app.example:80')).toBe('https://app.example:80')
    expect(pattern('http://*.app.example:80').matches('http://a.app.example')).toBe(true)
    for (const bad of ['http://', 'http://a/b', 'http://a@b', 'app.example', 'http://a b', '*', '', 'http://xn--0.a'])
      expect(parseOrigin(bad), bad).toBeUndefined()
  })

  it('an exact pattern matches its own origin only', () => {
    fc.assert(
      fc.property(origin, origin, (allowed, asked) => {
        const canonical = parseOrigin(write(asked))!
        expect(pattern(write(allowed)).matches(canonical)).toBe(canonical === parseOrigin(write(allowed)))
      }),
    )
  })

  it('a * stands for a label or a port, and never lets in a name that merely starts or ends like the pattern', () => {
    fc.assert(
      fc.property(label, name, scheme, port, name, (sub, domain, s, p, evil) => {
        const wildcardHost = pattern(`${s}://*.${domain}:${p}`)
        expect(wildcardHost.matches(parseOrigin(`${s}://${sub}.${domain}:${p}`)!)).toBe(true)
        expect(wildcardHost.matches(parseOrigin(`${s}://${sub}.${domain}:${p === 1 ? 2 : p - 1}`)!)).toBe(false)
        if (!`.${evil}`.endsWith(`.${domain}`)) expect(wildcardHost.matches(parseOrigin(`${s}://${evil}:${p}`)!)).toBe(false)
        const anyPort = pattern(`${s}://${domain}:*/*`)
        expect(anyPort.matches(parseOrigin(`${s}://${domain}:${p}`)!)).toBe(true)
        expect(anyPort.matches(parseOrigin(`${s}://${domain}.${evil}:${p}`)!)).toBe(false)
        expect(anyPort.matches(parseOrigin(`${s === 'http' ? 'https' : 'http'}://${domain}:${p}`)!)).toBe(false)
        expect(anyPort.matches('null')).toBe(false)
      }),
    )
  })

  it('null only when listed literally; * is every origin but null, and lets every site in', () => {
    expect(pattern('null').matches('null')).toBe(true)
    expect(pattern('*').matches('null')).toBe(false)
    expect(pattern('*').matches('https://anything.example')).toBe(true)
    for (const every of ['*', 'http://*', 'https://*:*', 'http://*/*']) expect(allowsEveryOrigin(pattern(every)), every).toBe(true)
    for (const some of ['http://localhost:*/*', 'https://*.app.example', 'null']) expect(allowsEveryOrigin(pattern(some)), some).toBe(false)
    for (const bad of ['localhost:3000', 'http://a/b', 'http*://a', '*://a', 'http://a:x', '']) expect(parseOriginPattern(bad), bad).toBeUndefined()
  })

  it("a request is the node's own when its Origin is http://<Host>; another origin needs --rpccorsdomain", () => {
    fc.assert(
      fc.property(loopbackName, port, origin, (host, listening, other) => {
        const access = { ...rules(listening), corsOrigins: [] }
        const hostHeader = `${host}:${listening}`
        expect(accessDecision({ host: hostHeader, origin: `http://${hostHeader}`.toLowerCase() }, access)).toBe('ok')
        expect(accessDecision({ host: hostHeader, origin: `https://${hostHeader}` }, access)).toMatchObject({ code: 'FORBIDDEN_ORIGIN' })
        expect(accessDecision({ host: hostHeader, origin: write(other) }, access)).toMatchObject({ code: 'FORBIDDEN_ORIGIN' })
        expect(accessDecision({ host: hostHeader, origin: write(other) }, { ...access, corsOrigins: [pattern(write(other))] })).toBe('cors')
        expect(accessDecision({ host: hostHeader, origin: 'null' }, access)).toMatchObject({ code: 'FORBIDDEN_ORIGIN' })
      }),
    )
  })

  it('Sec-Fetch-Site: another site without an allowed Origin is refused; none, same-origin or none at all pass', () => {
    fc.assert(
      fc.property(fc.constantFrom('cross-site', 'same-site', 'Cross-Site'), fc.constantFrom('none', 'same-origin', undefined), (foreign, own) => {
        const access = { ...rules(5001), corsOrigins: [pattern('https://app.example')] }
        expect(accessDecision({ host: '127.0.0.1:5001', secFetchSite: foreign }, access)).toMatchObject({ code: 'FORBIDDEN_ORIGIN' })
        expect(accessDecision({ host: '127.0.0.1:5001', secFetchSite: foreign, origin: 'https://app.example' }, access)).toBe('cors')
        expect(accessDecision({ host: '127.0.0.1:5001', secFetchSite: foreign, origin: 'http://127.0.0.1:5001' }, access)).toMatchObject({
          code: 'FORBIDDEN_ORIGIN',
        })
        expect(accessDecision({ host: '127.0.0.1:5001', secFetchSite: own }, access)).toBe('ok')
      }),
    )
  })

  it('the Host is checked before the Origin', () => {
    const access = { ...rules(5001), corsOrigins: [pattern('*')] }
    expect(accessDecision({ host: 'attacker.example:5001', origin: 'http://attacker.example:5001' }, access)).toMatchObject({ code: 'FORBIDDEN_HOST' })
    expect(parseAuthority('LOCALHOST:5001')).toEqual({ hostname: 'localhost', port: 5001 })
  })
})
