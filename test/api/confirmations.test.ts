import type { Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { anvilKeys } from '../../src/devnet/anvil.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import { eventually } from '../integration/support/eventually.ts'
import { startDevnet, startNode, type Devnet } from '../integration/support/devnet.ts'
import { serveNode, type ApiNode } from './support/apiNet.ts'

// A chain that mines a block only when a transaction comes (anvil's default, and `sluice chain` before it mined
// a block a second) never buries a node's own transaction under its confirmations: the action must answer
// with a clear error, not a 500 that stops the API, and the node must see the transaction once blocks come.
const CONFIRMATIONS = 3
const B = privateKeyToAddress(anvilKeys[2] as Hex)

let net: Devnet
let a: ApiNode
let devnet: ReturnType<typeof createDevnetClient>

beforeAll(async () => {
  net = await startDevnet([anvilKeys[1] as Hex])
  devnet = createDevnetClient({ rpcUrl: net.anvil.rpcUrl, privateKey: anvilKeys[0] })
  // Buried deep enough to start: the node's first sync needs the registration confirmed too.
  await devnet.mine({ blocks: CONFIRMATIONS })
  a = await serveNode(await startNode(net, anvilKeys[1] as Hex, { confirmations: CONFIRMATIONS, confirmationTimeoutMs: 1_500 }))
})

afterAll(async () => {
  await a?.server.close(100)
  await a?.node.stop()
  await net?.stop()
})

describe('a transaction whose block is not confirmed in time', () => {
  it('answers 503 CONFIRMATION_TIMEOUT, keeps the API up, and shows the channel once the chain is deeper', async () => {
    const opened = await a.request('PUT', '/channels', { token_address: net.token, partner_address: B, total_deposit: '0' })
    expect(opened.status, opened.text).toBe(503)
    expect(opened.body.code).toBe('CONFIRMATION_TIMEOUT')
    expect(opened.body.errors).toMatch(/mined in block \d+, which is not confirmed after 1\.5 s/)
    expect(opened.body.errors).toMatch(/--confirmations 0/)

    // Not an internal error: the API answers on, and the node still runs.
    expect(a.internalErrors).toEqual([])
    expect(await a.get('/address')).toMatchObject({ status: 200 })
    expect((await a.get(`/channels/${net.token}`)).body).toEqual([])

    // The transaction stands: once it is deep enough, the channel is there.
    await devnet.mine({ blocks: CONFIRMATIONS })
    await eventually(async () => {
      const channels = (await a.get(`/channels/${net.token}`)).body
      expect(channels).toMatchObject([{ partner_address: B, state: 'opened' }])
    })
  })
})
