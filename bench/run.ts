// `npm run bench`: every benchmark, printed as Markdown tables.
import { benchNode } from './node.ts'
import { benchProtocol } from './protocol.ts'
import { benchStorage } from './storage.ts'

function table(title: string, rows: Record<string, string>) {
  console.log(`\n### ${title}\n\n| measure | value |\n| --- | --- |`)
  for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${v} |`)
}

console.log(`Sluice benchmarks, ${new Date().toISOString()}, Node ${process.version}`)
table('Protocol core (one process: signing, encoding, decoding, verifying and every transition; payments include all their messages)', await benchProtocol())
table('Storage (payment-sized commits: 1 change, 1 outbox put, 1 outbox delete)', await benchStorage())
table('Node runtime (3 nodes, each in its own worker thread, LevelDB storage with sync writes, anvil)', await benchNode())
