/** The stream protocol that carries wire lines between two nodes. */
export const messageProtocol = '/sluice/msg/1.0.0'

/**
 * The gossipsub topic of presence announcements, from before the relays kept a registry: relays subscribe to it and
 * so act as its hubs; nodes publish on it (so that older nodes find them) and listen to it only through a relay
 * without the registry.
 */
export const presenceTopic = 'sluice/presence/1'

/** A node's presence stream to a relay: its signed record in, the records of the addresses it watches out. */
export const presenceProtocol = '/sluice/presence/2.0.0'
