import fc from 'fast-check'
import { describe, expect, test } from 'vitest'
import { refusal, type SeenRequest } from '../../../worker/ownOrigin.ts'

const OURS = 'https://dapp.example'
const CROSS_SITE = 'https://evil.example'
const SAME_SITE = 'https://blog.dapp.example'

const navigation = (over: Partial<SeenRequest>): SeenRequest => ({
  mode: 'navigate',
  method: 'GET',
  destination: 'document',
  referrer: '',
  referrerPolicy: 'strict-origin-when-cross-origin',
  ...over,
})

// What Chromium 156 showed the service worker for each way of reaching /api/v1 (docs/decisions/0026 has the table).
const seen: [string, SeenRequest, 'answered' | 'refused'][] = [
  ['an address typed into the address bar', navigation({}), 'answered'],
  ['a bookmark', navigation({}), 'answered'],
  ["Playwright's page.goto", navigation({ referrerPolicy: 'unsafe-url' }), 'answered'],
  ["a link or window.open of the dApp's own page", navigation({ referrer: `${OURS}/wallet` }), 'answered'],
  ["a form the dApp's own page posts", navigation({ method: 'POST', referrer: `${OURS}/` }), 'refused'],
  ["an iframe of the dApp's own page", navigation({ destination: 'iframe', referrer: `${OURS}/` }), 'refused'],
  ['a link, location change or window.open of another site', navigation({ referrer: `${CROSS_SITE}/` }), 'refused'],
  ['the same from another origin of the same site', navigation({ referrer: `${SAME_SITE}/` }), 'refused'],
  ['a form another site posts', navigation({ method: 'POST', referrer: `${CROSS_SITE}/` }), 'refused'],
  ['a page with <meta name=referrer content=no-referrer>', navigation({ referrerPolicy: 'no-referrer' }), 'refused'],
  ['a link with rel=noreferrer, or window.open noopener,noreferrer', navigation({ referrerPolicy: 'no-referrer' }), 'refused'],
  ['a page whose policy is same-origin', navigation({ referrerPolicy: 'same-origin' }), 'refused'],
  ['a page whose policy is origin', navigation({ referrer: `${CROSS_SITE}/`, referrerPolicy: 'origin' }), 'refused'],
  ['a redirect of another site with Referrer-Policy: no-referrer', navigation({ referrerPolicy: 'no-referrer' }), 'refused'],
  ['a redirect of another site with Referrer-Policy: unsafe-url', navigation({ referrer: `${CROSS_SITE}/page`, referrerPolicy: 'unsafe-url' }), 'refused'],
  ['a 307 redirect of a form POST with Referrer-Policy: no-referrer', navigation({ method: 'POST', referrerPolicy: 'no-referrer' }), 'refused'],
  ['an about:blank popup or srcdoc frame another site wrote', navigation({ referrer: `${CROSS_SITE}/` }), 'refused'],
  ['back or reload to a page refused before (the entry keeps its referrer)', navigation({ referrer: `${CROSS_SITE}/` }), 'refused'],
  ['an iframe of another origin of the same site', navigation({ destination: 'iframe', referrer: `${SAME_SITE}/` }), 'refused'],
  ['a form POST from the popup of a sandboxed or data: frame', navigation({ method: 'POST' }), 'refused'],
  // No origin to show (sandboxed or data: frame's popup, a blob: page): it looks typed, and is only a read.
  ['a GET from the popup of a sandboxed or data: frame, or a blob: page', navigation({}), 'answered'],
]

describe('refusal', () => {
  test.each(seen)('%s: %s', (_, request, verdict) => {
    expect(refusal(request, OURS, undefined) === undefined ? 'answered' : 'refused').toBe(verdict)
  })

  test('a request that is not a navigation is answered only for a client of the origin (a page, a worker of a blob: URL)', () => {
    const get: SeenRequest = { mode: 'cors', method: 'POST', destination: '', referrer: '', referrerPolicy: 'no-referrer' }
    expect(refusal(get, OURS, `${OURS}/app`)).toBeUndefined()
    expect(refusal(get, OURS, `blob:${OURS}/0b1c7e0e-0d6a-4b7e-9d4f-1f2e3d4c5b6a`)).toBeUndefined()
    expect(refusal(get, OURS, undefined)).toMatch(/own origin/)
    expect(refusal(get, OURS, `${SAME_SITE}/`)).toMatch(/own origin/)
    expect(refusal({ ...get, referrer: `${OURS}/` }, OURS, `${CROSS_SITE}/`)).toMatch(/own origin/)
  })

  const origins = fc.constantFrom(OURS, CROSS_SITE, SAME_SITE, 'http://dapp.example', 'https://dapp.example:8443', 'null')
  const referrers = fc.oneof(
    fc.constant(''),
    fc.tuple(origins, fc.webPath()).map(([o, p]) => (o === 'null' ? '' : `${o}${p}`)),
  )
  const policies = fc.constantFrom<ReferrerPolicy>(
    '',
    'no-referrer',
    'no-referrer-when-downgrade',
    'origin',
    'origin-when-cross-origin',
    'same-origin',
    'strict-origin',
    'strict-origin-when-cross-origin',
    'unsafe-url',
  )
  const navigations = fc.record({
    mode: fc.constant<RequestMode>('navigate'),
    method: fc.constantFrom('GET', 'POST', 'HEAD', 'PUT'),
    destination: fc.constantFrom<RequestDestination>('document', 'iframe', 'frame', 'object', 'embed'),
    referrer: referrers,
    referrerPolicy: policies,
  })

  test('no navigation that is not a top-level GET is answered, nor one of another origin, nor one that hides it; its client changes nothing', () => {
    fc.assert(
      fc.property(navigations, origins, (request, client) => {
        const answered = refusal(request, OURS, undefined) === undefined
        expect(refusal(request, OURS, `${client}/`) === undefined).toBe(answered)
        if (request.method !== 'GET' || request.destination !== 'document') expect(answered).toBe(false)
        if (request.referrer !== '' && new URL(request.referrer).origin !== OURS) expect(answered).toBe(false)
        if (request.referrer === '' && (request.referrerPolicy === 'no-referrer' || request.referrerPolicy === 'same-origin')) expect(answered).toBe(false)
        // And what is left is answered: the dApp's own links, and what looks typed.
        if (request.method === 'GET' && request.destination === 'document' && request.referrer.startsWith(`${OURS}/`)) expect(answered).toBe(true)
      }),
    )
  })
})
