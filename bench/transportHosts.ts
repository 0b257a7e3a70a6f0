// One payment-sized line at a time across hosts of their own (test/support/netns/: network namespaces, each link
// 20 ms ± 5 ms and 0.5 % loss each way), through a `sluice relay` on a third host, over a direct connection and over
// WebRTC (node-datachannel's, as a page's through its bridge):
// the round trip of a line and its echo, from one transport's process to another's (bench/pathClient.ts). It needs
// root and the kernel's namespaces; without them the row says why it was not measured.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stopSluice, startSluice } from '../test/cli/sluiceProcess.ts'
import { networkUnavailable } from '../test/support/netns/commands.ts'
import { createNetwork, type Host } from '../test/support/netns/network.ts'
import { startRelayIn } from '../test/support/netns/sluice.ts'
import { fmt, percentile } from './measure.ts'
import { LINE } from './transport.ts'

const CLIENT = new URL('./pathClient.ts', import.meta.url).pathname
const COUNT = 200
const WARM_UP = 20

/** The client in `host`, from the repository's folder (where tsx is found). */
function client(host: Host, task: unknown) {
  return startSluice([JSON.stringify(task)], process.cwd(), ['--import', 'tsx', CLIENT], { wrap: (command) => [...host.exec, ...command] })
}

const lastLine = (out: string) =>
  JSON.parse(
    out
      .trim()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .at(-1) ?? '{}',
  ) as Record<string, unknown>

export async function benchTransportHosts(): Promise<Record<string, string>> {
  const unavailable = networkUnavailable()
  const title = `a ${fmt(LINE.length)}-byte line and its echo between hosts 20 ms ± 5 apart (each way), one at a time: round trip in ms, median / 90th percentile of ${COUNT}`
  if (unavailable) return { [title]: `not measured: ${unavailable}` }
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-hosts-'))
  const network = await createNetwork({ hosts: ['relay', 'alice', 'bob'] })
  const rows: Record<string, string> = {}
  try {
    const { hosts } = network
    const relay = await startRelayIn(hosts.relay!, join(dir, 'relay'))
    try {
      for (const [path, listen, webrtc] of [
        ['through the relay on a third host', [], false],
        ['over a direct connection (bob listens on his overlay address)', [`/ip4/${hosts.bob!.overlay}/tcp/4001/ws`], false],
        ['over WebRTC, signalled through the relay (no ICE server: the hosts reach each other)', [], true],
      ] as const) {
        const echo = client(hosts.bob!, { mode: 'echo', relay: [relay.multiaddr], listen, webrtc })
        try {
          await echo.waitForOutput(/"ready":true/, 60_000)
          const { address } = lastLine(echo.stdout()) as { address: string }
          const ping = client(hosts.alice!, { mode: 'ping', relay: [relay.multiaddr], target: address, count: COUNT, warmUp: WARM_UP, line: LINE, webrtc })
          const { code } = await ping.exited
          const result = lastLine(ping.stdout()) as { rtts?: number[]; directPeers?: number; directConnections?: number; error?: string }
          if (code !== 0 || !result.rtts) throw new Error(`ping ${path}: ${result.error ?? ping.stderr().slice(-300)}`)
          if ((result.directPeers === 1) !== listen.length > 0 || (result.directConnections === 1) !== webrtc)
            throw new Error(`ping ${path}: not the path meant (direct peers: ${result.directPeers}, WebRTC: ${result.directConnections})`)
          rows[`${title}: ${path} (${network.emulation})`] = `${fmt(percentile(result.rtts, 50))} / ${fmt(percentile(result.rtts, 90))}`
        } finally {
          await stopSluice(echo, 5_000)
        }
      }
    } finally {
      await stopSluice(relay.sluice, 5_000)
    }
  } finally {
    await network.destroy()
    rmSync(dir, { recursive: true, force: true })
  }
  return rows
}
