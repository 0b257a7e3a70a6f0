import type { Address } from 'viem'
import { getChannel } from '../../protocol/state/access.ts'
import type { NodeState } from '../../protocol/state/types.ts'
import type { NodeClient } from '../actions/client.ts'
import type { Service } from './service.ts'

/** At most this many partners get a way opened at start: the ones of the latest channels (a hub has thousands). */
const PARTNERS_AT_START = 64

/**
 * Keeps the transport's way open to the partners of open channels (`Transport.connect`): at start, and when a
 * channel opens. Over a relay a first message otherwise waits for a circuit, Noise and yamux to be set up, a few
 * hundred milliseconds in a page; with the way open, the first payment costs what the next ones do.
 */
export class PartnerLinks implements Service {
  #off: (() => void) | undefined

  constructor(private readonly client: NodeClient) {}

  start(): void {
    for (const partner of openPartners(this.client.state, PARTNERS_AT_START)) this.client.connect(partner)
    this.#off = this.client.subscribe((notice) => {
      if (notice.type !== 'channelStateChanged' || notice.state !== 'opened') return
      const channel = getChannel(this.client.state, notice.tokenNetwork, notice.channelId)
      if (channel) this.client.connect(channel.partner)
    })
  }

  stop(): void {
    this.#off?.()
    this.#off = undefined
  }
}

/** The partners of the open channels, latest channel first, each once, at most `limit`. */
export function openPartners(state: NodeState, limit: number): Address[] {
  const partners = new Map<string, Address>()
  const open = Object.values(state.channels).filter((c) => c.state === 'opened')
  open.sort((a, b) => (a.openedBlock === b.openedBlock ? 0 : a.openedBlock > b.openedBlock ? -1 : 1))
  for (const channel of open) {
    if (partners.size >= limit) break
    partners.set(channel.partner.toLowerCase(), channel.partner)
  }
  return [...partners.values()]
}
