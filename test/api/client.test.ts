import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { httpClient, NodeApiError } from '../../worker/client.ts'
import { startApiNet, type ApiNet, type ApiNode } from './support/apiNet.ts'

/** sluice/client against real nodes over HTTP: the page's proxy is the same nodeClient over the request channel. */
let net: ApiNet
let a: ApiNode
let b: ApiNode
beforeAll(async () => {
  net = await startApiNet({ nodes: 2 })
  ;[a, b] = net.nodes as [ApiNode, ApiNode]
}, 120_000)
afterAll(() => net?.stopAll())

describe('httpClient (sluice/client)', () => {
  it('opens a channel with a bigint deposit, pays over it and reads the result, route included', async () => {
    const client = httpClient(a.url)
    expect(await client.address()).toEqual({ our_address: a.node.address })
    const channel = await client.openChannel({ token_address: net.token, partner_address: b.node.address, total_deposit: 100n })
    expect(channel).toMatchObject({ partner_address: b.node.address, balance: '100', state: 'opened' })
    await net.synced()
    const paid = await client.pay(net.token, b.node.address, { amount: 7n, identifier: 3 })
    expect(paid).toMatchObject({ amount: '7', identifier: '3', target_address: b.node.address, route: [b.node.address] })
    expect((await client.channel(net.token, b.node.address)).balance).toBe('93')
    expect(await client.payments({ token: net.token, partner: b.node.address, limit: 1 })).toEqual([
      expect.objectContaining({ event: 'EventPaymentSentSuccess', amount: '7', target: b.node.address }),
    ])
  }, 60_000)

  it("takes the API's URL as sluice serve prints it, sends the token, and throws NodeApiError with the API's code", async () => {
    const sent: Request[] = []
    const client = httpClient(`${a.url}/`, {
      token: 's3cret',
      fetch: (request) => {
        sent.push(request)
        return fetch(request)
      },
    })
    const error = await client.channel(net.token, a.node.address).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(NodeApiError)
    expect(error).toMatchObject({ status: 404, code: 'NOT_FOUND' })
    expect(sent.map((r) => [r.url, r.headers.get('authorization')])).toEqual([[`${a.url}/channels/${net.token}/${a.node.address}`, 'Bearer s3cret']])
  })
})
