import { getAddress, maxUint256, parseEventLogs, zeroAddress, type Address } from 'viem'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { CustomToken, Deposit, ServiceRegistry } from '../../src/contracts/index.ts'
import { anvilKeys, startAnvil, type Anvil } from '../../src/devnet/anvil.ts'
import { snapshotEach } from '../support/chainSuite.ts'
import { anvilClient, type AnvilClient } from '../support/clients.ts'
import { deploy } from '../support/deploy.ts'
import { expectRevert } from '../support/revert.ts'
import {
  constructorRevertReason,
  deployServices,
  fund,
  latestTimestamp,
  mineAt,
  mined,
  registerService,
  registryDefaults,
  type Services,
} from '../support/services.ts'

/** TS reference of ServiceRegistry.decayedPrice (docs/protocol.md §1.7): exp(-X/A) ≈ 24A^4 / (24A^4 + 24A^3X + 12A^2X^2 + 4AX^3 + X^4). */
function referenceDecayedPrice(setPrice: bigint, x: bigint, a: bigint, minPrice: bigint): bigint {
  if (x >= 2n ** 40n) return minPrice
  const p = 24n * a ** 4n
  const q = p + 24n * a ** 3n * x + 12n * a ** 2n * x ** 2n + 4n * a * x ** 3n + x ** 4n
  const price = (setPrice * p) / q
  return price < minPrice ? minPrice : price
}

const DAY = 86400n
let anvil: Anvil
let client: AnvilClient // deployer and controller
let service: AnvilClient
let other: AnvilClient
let s: Services

const registry = () => ({ address: s.serviceRegistry, abi: ServiceRegistry.abi }) as const
type RegistryGetter =
  | 'currentPrice'
  | 'set_price'
  | 'set_price_at'
  | 'min_price'
  | 'decay_constant'
  | 'registration_duration'
  | 'price_bump_numerator'
  | 'price_bump_denominator'
  | 'deprecated'
  | 'everMadeDepositsLen'
const readRegistry = <const F extends RegistryGetter>(functionName: F) => client.readContract({ ...registry(), functionName })
const validTill = (who: Address) => client.readContract({ ...registry(), functionName: 'service_valid_till', args: [who] })
const isRegistered = (who: Address) => client.readContract({ ...registry(), functionName: 'hasValidRegistration', args: [who] })
const tokens = (who: Address) => client.readContract({ address: s.token, abi: CustomToken.abi, functionName: 'balanceOf', args: [who] })

async function depositEvent(receipt: Awaited<ReturnType<typeof mined>>) {
  const [event] = parseEventLogs({ abi: ServiceRegistry.abi, logs: receipt.logs, eventName: 'RegisteredService' })
  if (!event) throw new Error('no RegisteredService event')
  const block = await client.getBlock({ blockNumber: receipt.blockNumber })
  return { ...event.args, timestamp: block.timestamp }
}

beforeAll(async () => {
  anvil = await startAnvil()
  client = anvilClient(anvil.rpcUrl, anvilKeys[0])
  service = anvilClient(anvil.rpcUrl, anvilKeys[1])
  other = anvilClient(anvil.rpcUrl, anvilKeys[2])
  s = await deployServices(client)
})
afterAll(() => anvil.stop())
snapshotEach(() => client)

describe('deployment', () => {
  test('stores the token, the controller given (not the deployer) and every parameter', async () => {
    const r = {
      ...registryDefaults,
      initialPrice: 5000n,
      priceBumpNumerator: 6n,
      priceBumpDenominator: 5n,
      decayConstant: 10n * DAY,
      minPrice: 7n,
      registrationDuration: 30n * DAY,
    }
    const address = await deploy(client, ServiceRegistry, [
      s.token,
      other.account.address,
      r.initialPrice,
      r.priceBumpNumerator,
      r.priceBumpDenominator,
      r.decayConstant,
      r.minPrice,
      r.registrationDuration,
    ])
    const get = (
      functionName:
        | 'token'
        | 'controller'
        | 'set_price'
        | 'price_bump_numerator'
        | 'price_bump_denominator'
        | 'decay_constant'
        | 'min_price'
        | 'registration_duration'
        | 'deprecated',
    ) => client.readContract({ address, abi: ServiceRegistry.abi, functionName } as never)
    expect(await get('token')).toBe(s.token)
    expect(await get('controller')).toBe(other.account.address)
    expect(await get('set_price')).toBe(5000n)
    expect(await get('price_bump_numerator')).toBe(6n)
    expect(await get('price_bump_denominator')).toBe(5n)
    expect(await get('decay_constant')).toBe(10n * DAY)
    expect(await get('min_price')).toBe(7n)
    expect(await get('registration_duration')).toBe(30n * DAY)
    expect(await get('deprecated')).toBe(false)
    expect(await client.readContract({ address, abi: ServiceRegistry.abi, functionName: 'set_price_at' })).toBe(await latestTimestamp(client))
  })

  test('an initial price below the default minimum of 1000 starts at 1000, as in raiden-contracts 0.40', async () => {
    const d = registryDefaults
    const address = await deploy(client, ServiceRegistry, [
      s.token,
      client.account.address,
      100n,
      d.priceBumpNumerator,
      d.priceBumpDenominator,
      d.decayConstant,
      10n,
      d.registrationDuration,
    ])
    expect(await client.readContract({ address, abi: ServiceRegistry.abi, functionName: 'set_price' })).toBe(1000n)
    expect(await client.readContract({ address, abi: ServiceRegistry.abi, functionName: 'min_price' })).toBe(10n)
  })

  test('the constructor checks the token, the initial price and the parameters', async () => {
    const d = registryDefaults
    const empty = await deploy(client, CustomToken, [0n, 18, 'Empty', 'E'])
    const construct = (token: Address, initial: bigint, over: Partial<typeof d> = {}) => {
      const p = { ...d, ...over }
      return constructorRevertReason(client, ServiceRegistry, [
        token,
        client.account.address,
        initial,
        p.priceBumpNumerator,
        p.priceBumpDenominator,
        p.decayConstant,
        p.minPrice,
        p.registrationDuration,
      ])
    }
    expect(await construct(zeroAddress, 2000n)).toBe('token at address zero')
    expect(await construct(service.account.address, 2000n)).toBe('token has no code')
    expect(await construct(s.token, 999n)).toBe('initial price too low')
    expect(await construct(s.token, 2n ** 90n + 1n)).toBe('intiial price too high') // sic, 0.40's spelling
    expect(await construct(empty, 2000n)).toBe('total supply zero')
    expect(await construct(s.token, 2000n, { priceBumpDenominator: 0n })).toBe('divide by zero')
    expect(await construct(s.token, 2000n, { decayConstant: 0n })).toBe('attempt to set zero decay constant')
  })
})

describe('price', () => {
  test('decayedPrice matches the TypeScript reference from no time at all to beyond 2^40 seconds', async () => {
    const a = registryDefaults.decayConstant
    const minPrice = registryDefaults.minPrice
    const elapsed = [0n, 1n, 3600n, DAY, 30n * DAY, 200n * DAY, 1000n * DAY, 2n ** 39n, 2n ** 40n - 1n, 2n ** 40n, 2n ** 41n, maxUint256]
    for (const setPrice of [2000n, 10n ** 18n, 2n ** 90n]) {
      for (const x of elapsed) {
        const onChain = await client.readContract({ ...registry(), functionName: 'decayedPrice', args: [setPrice, x] })
        expect(onChain, `price ${setPrice} after ${x}s`).toBe(referenceDecayedPrice(setPrice, x, a, minPrice))
      }
    }
    // Spot checks of the reference itself: after A seconds exp(-1) is approximated by 24/65 (about 0.369).
    expect(referenceDecayedPrice(65_000_000n, a, a, 0n)).toBe(24_000_000n)
    expect(referenceDecayedPrice(2000n, 2n ** 40n, a, minPrice)).toBe(minPrice)
  })

  test('decayedPrice follows the decay constant and the minimum currently set', async () => {
    await mined(client, client.writeContract({ ...registry(), functionName: 'changeParameters', args: [1n, 1n, 1000n, 0n, DAY] }))
    for (const x of [0n, 1n, 500n, 1000n, 12345n, 10n ** 6n]) {
      const onChain = await client.readContract({ ...registry(), functionName: 'decayedPrice', args: [10n ** 21n, x] })
      expect(onChain).toBe(referenceDecayedPrice(10n ** 21n, x, 1000n, 0n))
    }
  })

  test('currentPrice decays with block time from the last price change', async () => {
    const setAt = await readRegistry('set_price_at')
    const setPrice = await readRegistry('set_price')
    for (const x of [10n, 7n * DAY, 100n * DAY, 400n * DAY]) {
      await mineAt(client, setAt + x)
      expect(await readRegistry('currentPrice'), `after ${x}s`).toBe(
        referenceDecayedPrice(setPrice, x, registryDefaults.decayConstant, registryDefaults.minPrice),
      )
    }
  })
})

describe('deposit', () => {
  test('registers a new service for registration_duration, locking the price in a Deposit contract', async () => {
    const [setPrice, setPriceAt] = [await readRegistry('set_price'), await readRegistry('set_price_at')]
    const receipt = await registerService(service, s)
    const event = await depositEvent(receipt)
    // The price of the moment the deposit was mined.
    const price = await client.readContract({ ...registry(), functionName: 'decayedPrice', args: [setPrice, event.timestamp - setPriceAt] })
    const a = service.account.address
    expect(event.service).toBe(a)
    expect(event.deposit_amount).toBe(price)
    expect(event.valid_till).toBe(event.timestamp + registryDefaults.registrationDuration)
    expect(await validTill(a)).toBe(event.valid_till)
    expect(await isRegistered(a)).toBe(true)
    expect(await readRegistry('everMadeDepositsLen')).toBe(1n)
    expect(await client.readContract({ ...registry(), functionName: 'ever_made_deposits', args: [0n] })).toBe(a)
    const holder = { address: event.deposit_contract, abi: Deposit.abi } as const
    expect(await tokens(event.deposit_contract)).toBe(price)
    expect(await tokens(a)).toBe(0n)
    expect(await client.readContract({ ...holder, functionName: 'withdrawer' })).toBe(a)
    expect(await client.readContract({ ...holder, functionName: 'release_at' })).toBe(event.valid_till)
    expect(await client.readContract({ ...holder, functionName: 'token' })).toBe(s.token)
  })

  test('a live registration is extended from its end, an expired one from now, and the address is listed once', async () => {
    const a = service.account.address
    const first = await depositEvent(await registerService(service, s))
    const second = await depositEvent(await registerService(service, s))
    expect(second.valid_till).toBe(first.valid_till + registryDefaults.registrationDuration)
    await mineAt(client, second.valid_till + 10n)
    expect(await isRegistered(a)).toBe(false)
    const third = await depositEvent(await registerService(service, s))
    expect(third.valid_till).toBe(third.timestamp + registryDefaults.registrationDuration)
    expect(await readRegistry('everMadeDepositsLen')).toBe(1n)
  })

  test('a registration is valid up to one second before valid_till', async () => {
    const { valid_till } = await depositEvent(await registerService(service, s))
    await mineAt(client, valid_till - 1n)
    expect(await isRegistered(service.account.address)).toBe(true)
    await mineAt(client, valid_till)
    expect(await isRegistered(service.account.address)).toBe(false)
  })

  test('a limit below the current price is refused', async () => {
    await fund(service, s.token, s.serviceRegistry, await readRegistry('currentPrice'))
    // Read and simulate at one block, so both see the same timestamp (the price decays every second).
    const blockNumber = await service.getBlockNumber()
    const price = await service.readContract({ ...registry(), functionName: 'currentPrice', blockNumber })
    await expectRevert(service.simulateContract({ ...registry(), functionName: 'deposit', args: [price - 1n], blockNumber }), 'not enough limit')
    expect((await service.simulateContract({ ...registry(), functionName: 'deposit', args: [price], blockNumber })).result).toBe(true)
  })

  test('without an allowance the token refuses to move the deposit', async () => {
    await expectRevert(service.simulateContract({ ...registry(), functionName: 'deposit', args: [maxUint256] }), 'balance too low')
  })

  test('each deposit bumps the price by numerator/denominator and restarts the decay', async () => {
    await mined(
      client,
      client.writeContract({
        ...registry(),
        functionName: 'changeParameters',
        args: [6n, 5n, registryDefaults.decayConstant, registryDefaults.minPrice, registryDefaults.registrationDuration],
      }),
    )
    const event = await depositEvent(await registerService(service, s))
    expect(await readRegistry('set_price')).toBe((event.deposit_amount * 6n) / 5n)
    expect(await readRegistry('set_price_at')).toBe(event.timestamp)
    const next = await depositEvent(await registerService(other, s))
    const decayed = referenceDecayedPrice(
      (event.deposit_amount * 6n) / 5n,
      next.timestamp - event.timestamp,
      registryDefaults.decayConstant,
      registryDefaults.minPrice,
    )
    expect(next.deposit_amount).toBe(decayed)
  })

  test('a bumped price is capped at 2^90', async () => {
    const d = registryDefaults
    const address = getAddress(
      await deploy(client, ServiceRegistry, [s.token, client.account.address, 2n ** 90n, 3n, 2n, d.decayConstant, d.minPrice, d.registrationDuration]),
    )
    const price = await client.readContract({ address, abi: ServiceRegistry.abi, functionName: 'currentPrice' })
    // Headroom: an eth_call may run at a later timestamp than the block that mines the deposit (a second
    // boundary in between), where the price has decayed a little less.
    await fund(service, s.token, address, 2n * price)
    await mined(service, service.writeContract({ address, abi: ServiceRegistry.abi, functionName: 'deposit', args: [2n * price] }))
    expect(await client.readContract({ address, abi: ServiceRegistry.abi, functionName: 'set_price' })).toBe(2n ** 90n)
  })

  test('a zero or overflowing registration duration makes deposits fail', async () => {
    const d = registryDefaults
    await fund(service, s.token, s.serviceRegistry, 10n ** 6n)
    for (const duration of [0n, maxUint256]) {
      await mined(client, client.writeContract({ ...registry(), functionName: 'changeParameters', args: [1n, 1n, d.decayConstant, d.minPrice, duration] }))
      await expectRevert(service.simulateContract({ ...registry(), functionName: 'deposit', args: [maxUint256] }), 'overflow during extending the registration')
    }
  })
})

describe('setURL', () => {
  test('a registered service publishes its URL', async () => {
    await registerService(service, s)
    await mined(service, service.writeContract({ ...registry(), functionName: 'setURL', args: ['https://pfs.example'] }))
    expect(await client.readContract({ ...registry(), functionName: 'urls', args: [service.account.address] })).toBe('https://pfs.example')
  })

  test('an unregistered or lapsed service cannot, and the URL cannot be empty', async () => {
    await expectRevert(service.simulateContract({ ...registry(), functionName: 'setURL', args: ['https://x'] }), 'registration expired')
    const { valid_till } = await depositEvent(await registerService(service, s))
    await expectRevert(service.simulateContract({ ...registry(), functionName: 'setURL', args: [''] }), 'new url is empty string')
    await mineAt(client, valid_till)
    await expectRevert(service.simulateContract({ ...registry(), functionName: 'setURL', args: ['https://x'] }), 'registration expired')
  })
})

describe('controller', () => {
  test('deprecation stops new deposits and only the controller can switch it', async () => {
    await expectRevert(service.simulateContract({ ...registry(), functionName: 'setDeprecationSwitch' }), 'Can only be called by controller')
    expect((await client.simulateContract({ ...registry(), functionName: 'setDeprecationSwitch' })).result).toBe(true)
    await mined(client, client.writeContract({ ...registry(), functionName: 'setDeprecationSwitch' }))
    expect(await readRegistry('deprecated')).toBe(true)
    await fund(service, s.token, s.serviceRegistry, 10n ** 6n)
    await expectRevert(service.simulateContract({ ...registry(), functionName: 'deposit', args: [maxUint256] }), 'this contract was deprecated')
  })

  test('changeParameters checks each value and only the controller may call it', async () => {
    const d = registryDefaults
    const change = (num: bigint, den: bigint, decay: bigint) =>
      client.simulateContract({ ...registry(), functionName: 'changeParameters', args: [num, den, decay, d.minPrice, d.registrationDuration] })
    await expectRevert(
      service.simulateContract({ ...registry(), functionName: 'changeParameters', args: [1n, 1n, d.decayConstant, 0n, 0n] }),
      'Can only be called by controller',
    )
    await expectRevert(change(1n, 0n, d.decayConstant), 'divide by zero')
    await expectRevert(change(4n, 5n, d.decayConstant), 'price dump instead of bump')
    await expectRevert(change(2n ** 40n, 1n, d.decayConstant), 'price dump numerator is too big')
    await expectRevert(change(1n, 1n, 0n), 'attempt to set zero decay constant')
    await expectRevert(change(1n, 1n, 2n ** 40n), 'too big decay constant')
    expect((await change(2n ** 40n - 1n, 1n, 2n ** 40n - 1n)).result).toBe(true)
  })

  test('changeParameters stores the new values, allows a zero minimum and fixes the price reached so far', async () => {
    const setAt = await readRegistry('set_price_at')
    const setPrice = await readRegistry('set_price')
    await client.setNextBlockTimestamp({ timestamp: setAt + 50n * DAY })
    const receipt = await mined(client, client.writeContract({ ...registry(), functionName: 'changeParameters', args: [3n, 2n, 7n * DAY, 0n, 5n * DAY] }))
    const { timestamp } = await client.getBlock({ blockNumber: receipt.blockNumber })
    // Refreshed under the old decay constant and minimum.
    expect(await readRegistry('set_price')).toBe(referenceDecayedPrice(setPrice, 50n * DAY, registryDefaults.decayConstant, registryDefaults.minPrice))
    expect(await readRegistry('set_price_at')).toBe(timestamp)
    expect(await readRegistry('price_bump_numerator')).toBe(3n)
    expect(await readRegistry('price_bump_denominator')).toBe(2n)
    expect(await readRegistry('decay_constant')).toBe(7n * DAY)
    expect(await readRegistry('min_price')).toBe(0n)
    expect(await readRegistry('registration_duration')).toBe(5n * DAY)
  })

  test('the controller role can be handed on', async () => {
    await mined(client, client.writeContract({ ...registry(), functionName: 'changeController', args: [other.account.address] }))
    await expectRevert(client.simulateContract({ ...registry(), functionName: 'setDeprecationSwitch' }), 'Can only be called by controller')
    expect((await other.simulateContract({ ...registry(), functionName: 'setDeprecationSwitch' })).result).toBe(true)
  })
})

describe('Deposit.withdraw', () => {
  async function registered() {
    const event = await depositEvent(await registerService(service, s))
    return { ...event, holder: { address: event.deposit_contract, abi: Deposit.abi } as const }
  }

  test('the service gets its fee back from release_at on, once', async () => {
    const { holder, valid_till, deposit_amount } = await registered()
    const to = other.account.address
    await mineAt(client, valid_till - 1n)
    await expectRevert(service.simulateContract({ ...holder, functionName: 'withdraw', args: [to] }), 'deposit not released yet')
    await mineAt(client, valid_till)
    await mined(service, service.writeContract({ ...holder, functionName: 'withdraw', args: [to] }))
    expect(await tokens(to)).toBe(deposit_amount)
    expect(await tokens(holder.address)).toBe(0n)
    await expectRevert(service.simulateContract({ ...holder, functionName: 'withdraw', args: [to] }), 'nothing to withdraw')
  })

  test('nobody but the withdrawer can take the deposit', async () => {
    const { holder, valid_till } = await registered()
    await mineAt(client, valid_till)
    await expectRevert(other.simulateContract({ ...holder, functionName: 'withdraw', args: [other.account.address] }), 'the caller is not the withdrawer')
  })

  test('after deprecation the deposit can be withdrawn at once', async () => {
    const { holder, deposit_amount } = await registered()
    await expectRevert(service.simulateContract({ ...holder, functionName: 'withdraw', args: [service.account.address] }), 'deposit not released yet')
    await mined(client, client.writeContract({ ...registry(), functionName: 'setDeprecationSwitch' }))
    await mined(service, service.writeContract({ ...holder, functionName: 'withdraw', args: [service.account.address] }))
    expect(await tokens(service.account.address)).toBe(deposit_amount)
  })
})
