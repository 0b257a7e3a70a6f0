import { parseEther } from 'viem'
import { call } from '../api.ts'
import { ethBalance, faucet, tokenBalance, userDepositBalance } from '../chain.ts'
import { useAction, useLoad } from '../hooks.ts'
import { baseUnits, units } from '../tokens.ts'
import { Failure, Panel, type Shared } from './common.tsx'

/** Test money for the devnet: ETH from anvil's faucet, tokens minted by the node (`_testing`), a user deposit. */
export function FundingPanel({ shared }: { shared: Shared }) {
  const { config, address, deployment } = shared
  const userDeposit = deployment.contracts.UserDeposit.address
  const service = shared.tokenOf(deployment.serviceToken)
  const balances = useLoad(async () => {
    const tokens = await Promise.all(
      Object.entries(config.tokens).map(async ([symbol, token]) => [symbol, token, await tokenBalance(config.rpc, token, address)] as const),
    )
    return { eth: await ethBalance(config.rpc, address), tokens, userDeposit: await userDepositBalance(config.rpc, userDeposit, address) }
  }, [shared.tick])
  const fund = useAction()

  const fundAll = () =>
    fund.run(async () => {
      await faucet(config.rpc, address, parseEther('10'))
      for (const token of Object.values(config.tokens))
        await call('POST', `/_testing/tokens/${token}/mint`, { to: address, value: baseUnits('1000', shared.tokenOf(token)).toString() })
      const added = baseUnits('10', service)
      await call('POST', `/_testing/tokens/${service.address}/mint`, { to: address, value: added.toString() })
      const current = await userDepositBalance(config.rpc, userDeposit, address)
      await call('POST', '/user_deposit', { total_deposit: (current + added).toString() })
      shared.refresh()
    })

  return (
    <Panel title="Funds (devnet)" id="funding">
      <p class="hint">The devnet's faucet gives 10 ETH for gas; the node mints 1,000 of each test token and deposits 10 {service.symbol} (service tokens).</p>
      <button type="button" onClick={fundAll} disabled={fund.busy} data-testid="fund">
        {fund.busy ? 'Funding…' : 'Fund my node'}
      </button>
      <Failure error={fund.error ?? balances.error} shared={shared} />
      <table class="balances">
        <tbody>
          <tr>
            <th>ETH</th>
            <td>
              <span data-testid="eth-balance">{balances.data ? units(balances.data.eth) : '…'}</span> ETH
            </td>
          </tr>
          {balances.data?.tokens.map(([symbol, token, amount]) => (
            <tr key={symbol}>
              <th>{symbol} on-chain</th>
              <td>
                <span data-testid={`balance-${symbol}`}>{units(amount, shared.tokenOf(token).decimals)}</span> {symbol}
              </td>
            </tr>
          ))}
          <tr>
            <th>User deposit</th>
            <td>
              {balances.data ? units(balances.data.userDeposit, service.decimals) : '…'} {service.symbol}
            </td>
          </tr>
        </tbody>
      </table>
    </Panel>
  )
}
