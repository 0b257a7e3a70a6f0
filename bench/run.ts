// `npm run bench`: every benchmark, printed as Markdown tables.
import { benchProtocol } from './protocol.ts'

function table(title: string, rows: Record<string, string>) {
  console.log(`\n### ${title}\n\n| measure | value |\n| --- | --- |`)
  for (const [k, v] of Object.entries(rows)) console.log(`| ${k} | ${v} |`)
}

console.log(`Sluice benchmarks, ${new Date().toISOString()}, Node ${process.version}`)
table('Protocol core (one process: signing, encoding, decoding, verifying and every transition; payments include all their messages)', await benchProtocol())
