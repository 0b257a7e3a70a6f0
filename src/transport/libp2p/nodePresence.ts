import { TopicValidatorResult, type Message as PubsubMessage } from '@libp2p/gossipsub'
import type { PeerId, PrivateKey } from '@libp2p/interface'
import type { Libp2p } from 'libp2p'
import { Announcer } from './announcer.ts'
import type { Services } from './libp2pOptions.ts'
import { addressOfPeer } from './peerIdentity.ts'
import { encodeAnnouncement, readAnnouncement, signRecord } from './presence.ts'
import { PresenceLinks } from './presenceLinks.ts'
import { presenceProtocol } from './protocol.ts'
import type { RelayAddress } from './relayAddress.ts'

export type NodePresenceParameters = {
  relays: readonly RelayAddress[]
  /** The gossipsub topic kept for nodes from before the relays' registries. */
  topic: string
  privateKey: PrivateKey
  peerId: PeerId
  /** Where this node can be dialled now. */
  addresses: () => string[]
  /** Whether a peer is one of our relays (the topic's hub). */
  isRelay: (peer: PeerId) => boolean
  /** A record or an announcement heard, its signature checked (the peer directory judges what it says). */
  onHeard: (peerId: PeerId, data: Uint8Array) => void
  timeoutMs: number
  intervalMs: number
  log?: ConstructorParameters<typeof PresenceLinks>[0]['log'] & ConstructorParameters<typeof Announcer>[0]['log']
}

/**
 * A node's presence (docs/transport.md, Presence; docs/decisions/0067): its signed record put in each relay's
 * registry on start, on each change and every `intervalMs` (the announcer), the addresses it watches, and the
 * records the relays hand back (the presence links). The same announcement also goes on the gossipsub topic for
 * older nodes, without listening to it, unless a relay has no registry (`legacy`): then the node listens there too.
 */
export class NodePresence {
  readonly #parameters: NodePresenceParameters
  readonly #links: PresenceLinks
  readonly #announcer: Announcer
  #node: Libp2p<Services> | undefined
  #legacy = false
  #received = 0

  constructor(parameters: NodePresenceParameters) {
    this.#parameters = parameters
    const { relays, topic, privateKey, peerId, timeoutMs, log } = parameters
    this.#links = new PresenceLinks({
      relays,
      open: (relay, signal) => this.#node!.dialProtocol(relay, presenceProtocol, { signal }),
      onRecord: (from, data) => this.#heard(from, data),
      onLegacyRelay: () => {
        if (this.#legacy || !this.#node) return
        this.#legacy = true
        this.#node.services.pubsub.subscribe(topic)
      },
      timeoutMs,
      ...(log ? { log } : {}),
    })
    this.#announcer = new Announcer({
      publish: async (announcement) => {
        this.#links.put(await signRecord(privateKey, peerId.toString(), announcement))
        await this.#node!.services.pubsub.publish(topic, encodeAnnouncement(announcement))
      },
      addresses: parameters.addresses,
      intervalMs: parameters.intervalMs,
      ...(log ? { log } : {}),
    })
  }

  /** Records and announcements heard since start, ours and stale ones included. */
  get received(): number {
    return this.#received
  }

  /** Whether a relay without a registry made us listen on the topic. */
  get legacy(): boolean {
    return this.#legacy
  }

  /** Starts announcing, and listens to the node for what changes where we can be reached. Before `node.start()`. */
  attach(node: Libp2p<Services>): void {
    this.#node = node
    const { topic, isRelay } = this.#parameters
    this.#announcer.start()
    // A new reservation (after a relay restart, say) changes where we can be reached: say so.
    node.addEventListener('self:peer:update', () => {
      if (this.#parameters.addresses().length > 0) this.#announcer.soon()
    })
    const pubsub = node.services.pubsub
    pubsub.topicValidators.set(topic, (_peer, msg) =>
      msg.type === 'signed' && addressOfPeer(msg.from) && readAnnouncement(msg.data) ? TopicValidatorResult.Accept : TopicValidatorResult.Reject,
    )
    pubsub.addEventListener('message', (e) => this.#onTopic(e.detail))
    // A relay (the hub) joining the topic is when an announcement can first reach anyone there.
    pubsub.addEventListener('subscription-change', (e) => {
      if (isRelay(e.detail.peerId) && e.detail.subscriptions.some((s) => s.topic === topic && s.subscribe)) this.#announcer.soon()
    })
  }

  /** Opens the presence streams to the relays. After `node.start()`. */
  open(): void {
    this.#links.start(this.#node!)
  }

  /** Announce soon (once for a burst of reasons). */
  soon(): void {
    this.#announcer.soon()
  }

  /** Asks the relays for `address`'s record, now and on each newer one. */
  watch(address: string): void {
    this.#links.watch(address)
  }

  stop(): void {
    this.#announcer.stop()
    this.#links.stop()
    this.#legacy = false
    this.#node = undefined
  }

  #heard(from: PeerId, data: Uint8Array): void {
    this.#received++
    this.#parameters.onHeard(from, data)
  }

  #onTopic(msg: PubsubMessage): void {
    if (msg.topic !== this.#parameters.topic || msg.type !== 'signed') return
    this.#heard(msg.from, msg.data)
  }
}
