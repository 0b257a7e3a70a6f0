import { parseEther, parseUnits } from 'viem'
import { call } from '../api.ts'
import { ethBalance, faucet, tokenBalance, units, userDepositBalance } from '../chain.ts'
import { useAction, useLoad } from '../hooks.ts'
import { Failure, Panel, type Shared } from './common.tsx'

type Deployment = { serviceToken: `0x${string}`; contracts: { UserDeposit: { address: `0x${string}` } } }

/** Test money for the devnet: ETH from anvil's faucet, tokens minted by the node (`_testing`), a user deposit. */
export function FundingPanel({ shared }: { shared: Shared }) {
  const { config, address } = shared
  const deployment = useLoad(async () => (await (await fetch(config.deployment)).json()) as Deployment, [])
  const balances = useLoad(async () => {
    const d = deployment.data
    const tokens = await Promise.all(
      Object.entries(config.tokens).map(async ([symbol, token]) => [symbol, await tokenBalance(config.rpc, token, address)] as const),
    )
    return {
      eth: await ethBalance(config.rpc, address),
      tokens,
      userDeposit: d ? await userDepositBalance(config.rpc, d.contracts.UserDeposit.address, address) : undefined,
    }
  }, [shared.tick, deployment.data])
  const fund = useAction()

  const fundAll = () =>
    fund.run(async () => {
      await faucet(config.rpc, address, parseEther('10'))
      for (const token of Object.values(config.tokens))
        await call('POST', `/_testing/tokens/${token}/mint`, { to: address, value: parseUnits('1000', 18).toString() })
      const d = deployment.data
      if (d) {
        const service = parseUnits('10', 18)
        await call('POST', `/_testing/tokens/${d.serviceToken}/mint`, { to: address, value: service.toString() })
        const current = await userDepositBalance(config.rpc, d.contracts.UserDeposit.address, address)
        await call('POST', '/user_deposit', { total_deposit: (current + service).toString() })
      }
      shared.refresh()
    })

  return (
    <Panel title="Funds (devnet)" id="funding">
      <p class="hint">The devnet's faucet gives 10 ETH for gas; the node mints 1,000 of each test token and deposits 10 service tokens.</p>
      <button type="button" onClick={fundAll} disabled={fund.busy} data-testid="fund">
        {fund.busy ? 'Funding…' : 'Fund my node'}
      </button>
      <Failure error={fund.error ?? balances.error} />
      <table class="balances">
        <tbody>
          <tr>
            <th>ETH</th>
            <td data-testid="eth-balance">{balances.data ? units(balances.data.eth) : '…'}</td>
          </tr>
          {balances.data?.tokens.map(([symbol, amount]) => (
            <tr key={symbol}>
              <th>{symbol} on-chain</th>
              <td data-testid={`balance-${symbol}`}>{units(amount)}</td>
            </tr>
          ))}
          <tr>
            <th>User deposit</th>
            <td>{balances.data?.userDeposit !== undefined ? units(balances.data.userDeposit) : '…'}</td>
          </tr>
        </tbody>
      </table>
    </Panel>
  )
}
