/**
 * The site's page (test/support/engines/site.ts): startNode from the package through an import map, what the
 * engine tests ask of the node, and the benches' measuring loops, in plain JavaScript (called by name as
 * `window.site.<name>(...)`, so nothing of tsx's output has to run in a browser). The bench's own parts
 * (`/pad.js`, `/kdf.worker.js`) load only when called.
 */
export const SITE_PAGE = `<!doctype html><html><body>
<script type="importmap">{ "imports": { "sluice/browser": "/sluice/browser.js" } }</script>
<script type="module">
import { startNode } from 'sluice/browser'

async function timed(request) {
  const t0 = performance.now()
  await request()
  return performance.now() - t0
}

async function viaServiceWorker(path) {
  const response = await fetch(path)
  const body = await response.json()
  if (!response.ok) throw new Error(path + ' answered ' + response.status + ': ' + JSON.stringify(body))
  return body
}

window.site = {
  async start(options) {
    const t0 = performance.now()
    window.node = await startNode(options)
    const started = performance.now()
    const { our_address } = await viaServiceWorker('/api/v1/address')
    const answered = performance.now()
    return { address: our_address, startNode: started - t0, answered: answered - t0, sinceNavigation: answered }
  },
  async stop() {
    await window.node.stop()
    window.node = undefined
  },
  /** What the node says of this tab: whether it runs the node here, and the browser's answer on persistence. */
  about() {
    return { leader: window.node.leader, storagePersisted: window.node.storagePersisted ?? 'unanswered', controlled: !!navigator.serviceWorker?.controller }
  },
  /** Push events heard since listen(), kept in order (node.subscribe). */
  events: [],
  listen() {
    window.unsubscribe?.()
    window.unsubscribe = window.node.subscribe((event) => window.site.events.push(event))
  },
  /** node.exportKeystore(): the key encrypted with scrypt N = 2^18 in the node's worker; its time and its KDF's cost. */
  async exportKeystore() {
    const t0 = performance.now()
    const keystore = await window.node.exportKeystore()
    return { ms: performance.now() - t0, kdfparams: keystore.crypto.kdfparams }
  },
  /** The passphrase KDF candidates, timed in a module worker (bench/kdfWorker.ts). */
  kdf(runs) {
    const worker = new Worker('/kdf.worker.js', { type: 'module' })
    return new Promise((resolve, reject) => {
      worker.onmessage = ({ data }) => resolve(data)
      worker.onerror = (e) => reject(new Error(e.message))
      worker.postMessage(runs)
    }).finally(() => worker.terminate())
  },
  /** The node's export kept in the page (for the stored-payments curve), and its row counts. */
  async exportCounts() {
    window.exported = await window.node.exportState()
    return (await import('/pad.js')).counts(window.exported)
  },
  /** What the payments since \`before\` left in the export: the padding's templates, as lossless JSON. */
  async shape(before, payments) {
    return (await import('/pad.js')).shape(window.exported, before, payments)
  },
  /** Pads the stopped node's IndexedDB store with payments [from, to); the ms it took. */
  async padStore(shapeText, from, to) {
    return (await import('/pad.js')).padStore(shapeText, from, to)
  },
  /** The payment identifier of the export's first payment (a paid one, to pay again). */
  firstIdentifier() {
    return window.exported.payments[0].identifier.toString()
  },
  /** n requests one after the other through the service worker, each answered with success; each one's ms. */
  async timeCalls(method, path, body, n) {
    const ms = []
    for (let i = 0; i < n; i++) {
      const t0 = performance.now()
      const answer = await this.call(method, path, body)
      if (answer.status >= 300) throw new Error(method + ' ' + path + ' answered ' + answer.status + ': ' + JSON.stringify(answer.body))
      ms.push(performance.now() - t0)
    }
    return ms
  },
  async estimate() {
    const { usage, quota } = await navigator.storage.estimate()
    return { usage, quota }
  },
  call(method, path, body) {
    return fetch(path, { method, ...(body == null ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) }).then(async (r) => ({ status: r.status, body: await r.json() }))
  },
  /** n sequential requests through the service worker and n on the proxy, each after its warm-up. */
  async latencies(path, warmUp, n) {
    const serviceWorker = []
    const proxy = []
    for (let i = 0; i < warmUp; i++) await viaServiceWorker(path)
    for (let i = 0; i < n; i++) serviceWorker.push(await timed(() => viaServiceWorker(path)))
    for (let i = 0; i < warmUp; i++) await window.node.channels()
    for (let i = 0; i < n; i++) proxy.push(await timed(() => window.node.channels()))
    return { serviceWorker, proxy }
  },
  /** n payments of 1 to the target, one at a time, through the service worker (fetch) or on the proxy (node.pay()). */
  async paySequential(token, target, n, via) {
    const latencies = []
    const failures = []
    for (let i = 0; i < n; i++) {
      const t = performance.now()
      try {
        if (via === 'proxy') await window.node.pay(token, target, { amount: '1' })
        else {
          const response = await fetch('/api/v1/payments/' + token + '/' + target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":"1"}' })
          const text = await response.text()
          if (response.status !== 200) {
            failures.push(response.status + ' ' + text)
            continue
          }
        }
        latencies.push(performance.now() - t)
      } catch (e) {
        failures.push(String(e))
      }
    }
    return { latencies, failures: failures.length, firstFailures: failures.slice(0, 3) }
  },
  /** n payments of 1 to the target, inFlight at a time through the service worker (or on the proxy); each one's latency, and the failures. */
  async pay(token, target, n, inFlight, via) {
    const latencies = []
    const failures = []
    let next = 0
    const t0 = performance.now()
    await Promise.all(Array.from({ length: inFlight }, async () => {
      while (next < n) {
        next++
        const t = performance.now()
        try {
          if (via === 'proxy') {
            await window.node.pay(token, target, { amount: '1' })
            latencies.push(performance.now() - t)
            continue
          }
          const response = await fetch('/api/v1/payments/' + token + '/' + target, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"amount":"1"}' })
          const text = await response.text()
          if (response.status === 200) latencies.push(performance.now() - t)
          else failures.push(response.status + ' ' + text)
        } catch (e) {
          failures.push(String(e))
        }
      }
    }))
    return { seconds: (performance.now() - t0) / 1000, latencies, failures: failures.length, firstFailures: failures.slice(0, 3) }
  },
}
</script>
</body></html>
`
