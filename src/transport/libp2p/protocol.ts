/** The stream protocol that carries wire lines between two nodes. */
export const messageProtocol = '/sluice/msg/1.0.0'

/** The gossipsub topic of presence announcements; relays subscribe to it and so act as its hubs. */
export const presenceTopic = 'sluice/presence/1'
