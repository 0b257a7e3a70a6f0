/// <reference lib="webworker" />
// The candidates for what a page's passphrase costs at each start (docs/decisions/0027), timed where the node's key
// is unlocked: a module worker of Chromium, running src/chain/keystore.ts as the node's worker does (scrypt in
// @noble/hashes, PBKDF2 through WebCrypto). bench/browser.ts builds it into the bench's site and asks it once.
import { decryptKeystore, encryptKeystore, type Pbkdf2Cost, type ScryptCost } from '../src/chain/keystore.ts'

export type KdfTiming = { name: string; ms: number[] }

const CANDIDATES: [string, ScryptCost | Pbkdf2Cost][] = [
  ['PBKDF2-HMAC-SHA256, 600,000 rounds (WebCrypto)', { c: 600_000 }],
  ["scrypt N = 4096, r = 8, p = 6 (geth's light; the first format)", { n: 4096, r: 8, p: 6 }],
  ['scrypt N = 2^14, r = 8, p = 1 (16 MiB)', { n: 2 ** 14, r: 8, p: 1 }],
  ['scrypt N = 2^15, r = 8, p = 1 (32 MiB)', { n: 2 ** 15, r: 8, p: 1 }],
  ["scrypt N = 2^17, r = 8, p = 1 (128 MiB, OWASP's minimum)", { n: 2 ** 17, r: 8, p: 1 }],
  ["scrypt N = 2^18, r = 8, p = 1 (256 MiB, geth's standard)", { n: 2 ** 18, r: 8, p: 1 }],
]

self.onmessage = async ({ data: runs }: MessageEvent<number>) => {
  const key = `0x${'11'.repeat(32)}` as const
  const timings: KdfTiming[] = []
  for (const [name, cost] of CANDIDATES) {
    const keystore = await encryptKeystore(key, 'a passphrase', cost)
    const ms: number[] = []
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now()
      await decryptKeystore(keystore, 'a passphrase')
      ms.push(performance.now() - t0)
    }
    timings.push({ name, ms })
  }
  self.postMessage(timings)
}
