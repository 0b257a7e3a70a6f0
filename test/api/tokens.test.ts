import fc from 'fast-check'
import { getAddress, parseEther, type Address, type Hex } from 'viem'
import { privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { stringify } from '../../src/api/bigintJson.ts'
import { createChainClient, createTransactionQueue, readRegistryLimits, readTokenNetworkOf, registerToken } from '../../src/chain/index.ts'
import { CustomToken, bytecode } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { deployContracts, type DeployContractsReturnType } from '../../src/devnet/deploy.ts'
import { createDevnetClient } from '../../src/devnet/devnetClient.ts'
import type { SluiceNode } from '../../src/node/sluiceNode.ts'
import { startNode } from '../integration/support/devnet.ts'
import { serveNode, type ApiNode } from './support/apiNet.ts'
import { waitForReceipt } from '../../src/chain/receipt.ts'

/** The registry of this file accepts 3 token networks: TTT (registered at start), then two through the API. */
const MAX_TOKEN_NETWORKS = 3n

let anvil: Anvil
let devnet: ReturnType<typeof createDevnetClient>
let deployment: DeployContractsReturnType
let node: SluiceNode
let dev: ApiNode
let prod: ApiNode
let TTT: Address
let TT2: Address
let tokenNetworkTTT: Address
/** ERC-20 tokens deployed here: X1 and X2 with a supply, X0 with none (its TokenNetwork constructor reverts). */
let X0: Address
let X1: Address
let X2: Address
const C = privateKeyToAddress(anvilKeys[8] as Hex)
const NO_CODE = getAddress('0x00000000000000000000000000000000000000aa')

async function deployToken(symbol: string, supply: bigint): Promise<Address> {
  const hash = await devnet.deployContract({ abi: CustomToken.abi, bytecode: bytecode.CustomToken, args: [supply, 18, symbol, symbol] })
  const receipt = await waitForReceipt(devnet, hash, { timeout: 20_000 })
  return getAddress(receipt.contractAddress!)
}

beforeAll(async () => {
  anvil = await startAnvil()
  devnet = createDevnetClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0] })
  deployment = await deployContracts(devnet, { rpcUrl: anvil.rpcUrl, maxTokenNetworks: MAX_TOKEN_NETWORKS })
  ;({ TTT, TT2 } = deployment.tokens)
  const deployer = await createChainClient({ rpcUrl: anvil.rpcUrl, privateKey: anvilKeys[0], pollingInterval: 50 })
  ;({ tokenNetwork: tokenNetworkTTT } = await registerToken(deployer, createTransactionQueue(deployer), {
    registry: deployment.contracts.TokenNetworkRegistry.address,
    token: TTT,
  }))
  X0 = await deployToken('X0', 0n)
  X1 = await deployToken('X1', 10n ** 24n)
  X2 = await deployToken('X2', 10n ** 24n)
  const net = {
    anvil,
    deployment,
    token: TTT,
    tokenNetwork: tokenNetworkTTT,
    channelName: `sluice-tokens-${Math.random()}`,
    dataDir: '',
    stop: () => anvil.stop(),
  }
  node = await startNode(net, anvilKeys[1] as Hex)
  dev = await serveNode(node)
  prod = await serveNode(node, { environment: 'production' })
})

afterAll(async () => {
  for (const served of [dev, prod]) await served?.server.close(100)
  await node?.stop()
  await anvil?.stop()
})

/** What a refused registration must leave alone: the node's token networks, its nonce, the registry's count. */
async function snapshot() {
  return {
    tokenNetworks: stringify(node.state.tokenNetworks),
    nonce: await devnet.getTransactionCount({ address: node.address }),
    created: (await readRegistryLimits(node.client.chain, { registry: deployment.contracts.TokenNetworkRegistry.address })).tokenNetworksCreated,
  }
}

function expectError(r: { status: number; body: any }, status: number, message?: RegExp) {
  expect(r.status, JSON.stringify(r.body)).toBe(status)
  expect(typeof r.body?.errors).toBe('string')
  if (message) expect(r.body.errors).toMatch(message)
}

describe('GET tokens', () => {
  it('/tokens lists every registered token the node knows, with or without channels', async () => {
    expect(await dev.get('/tokens')).toMatchObject({ status: 200, body: [TTT] })
  })

  it('/tokens/<token> is the token network as a JSON string; 404 when none or not EIP-55', async () => {
    const r = await dev.get(`/tokens/${TTT}`)
    expect(r.status).toBe(200)
    expect(r.text).toBe(JSON.stringify(tokenNetworkTTT))
    expectError(await dev.get(`/tokens/${TT2}`), 404, /No token network registered/)
    expectError(await dev.get(`/tokens/${TTT.toLowerCase()}`), 404)
  })

  it('/tokens/<token>/partners: [] without channels, then one entry per partner with the link to its channel', async () => {
    expect(await dev.get(`/tokens/${TTT}/partners`)).toMatchObject({ status: 200, body: [] })
    expect((await dev.request('PUT', '/channels', { partner_address: C, token_address: TTT })).status).toBe(201)
    const r = await dev.get(`/tokens/${TTT}/partners`)
    expect(r.body).toEqual([{ partner_address: C, channel: `/api/v1/channels/${TTT}/${C}` }])
    // The link is a plain path of this API: following it gives the channel.
    const followed = await fetch(new URL(r.body[0].channel, dev.url))
    expect(followed.status).toBe(200)
    expect(await followed.json()).toMatchObject({ partner_address: C, token_address: TTT, state: 'opened' })
  })

  it('/tokens/<token>/partners of an unknown token is 404 (the API description; the Raiden node answers [])', async () => {
    expectError(await dev.get(`/tokens/${TT2}/partners`), 404, /No token network registered/)
    expectError(await dev.get(`/tokens/${TTT.toLowerCase()}/partners`), 404)
  })
})

describe('PUT /tokens/<token> refused: nothing changes', () => {
  const register = (token: string, on: ApiNode = dev) => on.request('PUT', `/tokens/${token}`)
  let before: Awaited<ReturnType<typeof snapshot>>
  beforeAll(async () => {
    before = await snapshot()
  })

  it('501 in environment production, whatever the token', async () => {
    for (const token of [TT2, TTT, NO_CODE]) expectError(await register(token, prod), 501, /disabled in production/)
  })

  it('404 when the path address is not EIP-55', async () => {
    for (const token of [TT2.toLowerCase(), TT2.slice(0, 20), 'token']) expectError(await register(token), 404)
  })

  it('409: zero address, already registered, no code, not ERC-20, the registering transaction fails', async () => {
    expectError(await register('0x0000000000000000000000000000000000000000'), 409, /non-zero/)
    expectError(await register(TTT), 409, /already registered/)
    expectError(await register(NO_CODE), 409, /does not contain code/)
    expectError(await register(deployment.contracts.SecretRegistry.address), 409, /ERC20/)
    // X0 answers totalSupply() = 0: the TokenNetwork constructor refuses it, so the transaction would revert.
    expectError(await register(X0), 409, /no supply/)
  })

  it('402 without ETH for gas', async () => {
    await devnet.setBalance({ address: node.address, value: 0n })
    try {
      expectError(await register(TT2), 402, /insufficient ETH/)
    } finally {
      await devnet.setBalance({ address: node.address, value: parseEther('10000') })
    }
  })

  it('left no trace', async () => {
    expect(await snapshot()).toEqual(before)
    expect(dev.internalErrors).toEqual([])
    expect(prod.internalErrors).toEqual([])
  })
})

describe('PUT /tokens/<token> registers', () => {
  it('201 with the token network, already synced by the node when the call returns', async () => {
    const r = await dev.request('PUT', `/tokens/${TT2}`)
    expect(r.status, r.text).toBe(201)
    expect(r.body).toEqual({
      token_network_address: await readTokenNetworkOf(node.client.chain, { registry: deployment.contracts.TokenNetworkRegistry.address, token: TT2 }),
    })
    expect((await dev.get(`/tokens/${TT2}`)).body).toBe(r.body.token_network_address)
    expect((await dev.get('/tokens')).body).toEqual([TTT, TT2])
    expect(await dev.get(`/tokens/${TT2}/partners`)).toMatchObject({ status: 200, body: [] })
    expectError(await dev.request('PUT', `/tokens/${TT2}`), 409, /already registered/)
  })

  it('two registrations of one token at once: one 201, one 409', async () => {
    const replies = await Promise.all([dev.request('PUT', `/tokens/${X1}`), dev.request('PUT', `/tokens/${X1}`)])
    expect(replies.map((r) => r.status).sort()).toEqual([201, 409])
    expect((await dev.get('/tokens')).body).toEqual([TTT, TT2, X1])
  })

  it("403 once the registry's maximum of token networks is reached, before any transaction", async () => {
    const before = await snapshot()
    expect(before.created).toBe(MAX_TOKEN_NETWORKS)
    expectError(await dev.request('PUT', `/tokens/${X2}`), 403, /maximum of 3/)
    expect(await snapshot()).toEqual(before)
  })
})

describe('fuzzing: never a 500, never a change', () => {
  it('PUT and GET /tokens/<anything>', async () => {
    const before = await snapshot()
    // X2 and the service token could be registered but for the limit; the rest never can.
    const known = [
      TTT,
      TT2,
      X0,
      X1,
      X2,
      NO_CODE,
      deployment.serviceToken,
      deployment.contracts.SecretRegistry.address,
      deployment.contracts.TokenNetworkRegistry.address,
      deployment.contracts.UserDeposit.address,
    ]
    const segment = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...known) },
      { weight: 1, arbitrary: fc.constantFrom(...known.map((t) => t.toLowerCase())) },
      { weight: 1, arbitrary: fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => getAddress(`0x${Buffer.from(b).toString('hex')}`)) },
      { weight: 1, arbitrary: fc.string().map(encodeURIComponent) },
    )
    await fc.assert(
      fc.asyncProperty(segment, fc.constantFrom('', '/partners'), fc.constantFrom('GET', 'PUT'), async (token, tail, method) => {
        const r = await dev.request(method, `/tokens/${token}${tail}`)
        expect(r.status, `${method} /tokens/${token}${tail} -> ${r.text}`).not.toBe(500)
        expect(r.status).not.toBe(201)
        if (r.status >= 400) expect(typeof r.body?.errors, r.text).toBe('string')
      }),
      { numRuns: 300 },
    )
    expect(await snapshot()).toEqual(before)
    expect(dev.internalErrors).toEqual([])
  })
})
