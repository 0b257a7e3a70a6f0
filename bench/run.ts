// `npm run bench`: every benchmark, printed as Markdown tables.
import { benchApi } from './api.ts'
import { benchBrowser } from './browser.ts'
import { benchNode } from './node.ts'
import { benchPackage } from './package.ts'
import { profilePayment } from './profile.ts'
import { benchProtocol } from './protocol.ts'
import { benchStorage } from './storage.ts'

function table(title: string, rows: Record<string, string>) {
  console.log(`\n### ${title}\n\n| measure | value |\n| --- | --- |`)
  for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${v} |`)
}

console.log(`Sluice benchmarks, ${new Date().toISOString()}, Node ${process.version}`)
table('Package: what a browser downloads, gzipped (target: the node worker without libp2p at most 250 kB)', await benchPackage())
table('Protocol core (one process: signing, encoding, decoding, verifying and every transition; payments include all their messages)', await benchProtocol())
table('Storage (payment-sized commits: 1 change, 1 outbox put, 1 outbox delete)', await benchStorage())
table('Node runtime (3 nodes, each in its own worker thread, LevelDB storage with sync writes, anvil)', await benchNode())
table('REST API over HTTP (sluice devnet in its own process: 2 nodes, LevelDB storage with sync writes, anvil; keep-alive fetch)', await benchApi())
table('The node in a page (Chromium headless; the package as built; anvil, a sluice relay and a headless sluice serve peer)', await benchBrowser())
table('CPU profile of one direct payment (both nodes in one process, LevelDB sync writes; self time per payment)', await profilePayment())
