import { get } from '../api.ts'
import { useLoad } from '../hooks.ts'
import { CopyButton, Failure, Panel, sameAddress, short, type Shared } from './common.tsx'

/** GET /api/v1/monitoring, the fields this panel shows (docs/rest-api.md; decision 0035). */
type Monitoring = {
  enabled: boolean
  reward: string
  user_deposit: { effective_balance: string; covers_reward: boolean } | null
  services: { address: string; acknowledged: number; last_acknowledged_at: string | null; waiting: number }[]
  channels: {
    token_address: string
    partner_address: string
    state: string
    requested_nonce: string | null
    acknowledged: { service_address: string; nonce: string; acknowledged_at: string }[]
  }[]
}

/**
 * What protects the node while this tab is closed: the monitoring services that hold each partner's newest proof,
 * and what each acknowledged. One row per kind of protection, so the off-browser backup gets a row of its own.
 */
export function ProtectionPanel({ shared }: { shared: Shared }) {
  const monitoring = useLoad(() => get<Monitoring>('/monitoring'), [shared.tick])
  const m = monitoring.data
  const service = shared.tokenOf(shared.deployment.serviceToken)
  const serviceName = (address: string) => (sameAddress(address, shared.config.monitor.address) ? "the devnet's monitoring service" : short(address))
  const guarded = m?.channels.filter((c) => c.state === 'opened') ?? []
  return (
    <Panel title="While you are away" id="protection">
      <dl class="facts">
        <dt>Monitoring</dt>
        <dd data-testid="monitoring-state">
          {!m ? (
            '…'
          ) : m.enabled ? (
            <>
              <span class="chip opened">on</span> {shared.amount(m.reward, service.address)} offered per request
              {m.user_deposit && !m.user_deposit.covers_reward ? (
                <span class="hint warn"> · your user deposit does not cover it yet: fund your node</span>
              ) : null}
            </>
          ) : (
            <span class="chip">off</span>
          )}
        </dd>
        {m?.enabled ? (
          <>
            <dt>Services</dt>
            <dd>
              {m.services.length === 0 ? (
                <span class="hint">none registered in the ServiceRegistry</span>
              ) : (
                <ul class="plain">
                  {m.services.map((s) => (
                    <li key={s.address} data-testid="monitoring-service">
                      <span title={s.address}>{serviceName(s.address)}</span> <CopyButton text={s.address} />
                      <span class="hint">
                        {' '}
                        {s.acknowledged} acknowledged
                        {s.last_acknowledged_at ? `, last at ${new Date(s.last_acknowledged_at).toLocaleTimeString()}` : ''}
                        {s.waiting ? `, ${s.waiting} on the way` : ''}
                      </span>
                    </li>
                  ))}
                </ul>
              )}
            </dd>
            <dt>Guarded</dt>
            <dd>
              {guarded.length === 0 ? (
                <span class="hint">no channel yet: a channel is guarded once its partner pays you</span>
              ) : (
                <ul class="plain">
                  {guarded.map((c) => {
                    const last = c.acknowledged.reduce<(typeof c.acknowledged)[number] | undefined>(
                      (newest, a) => (!newest || BigInt(a.nonce) > BigInt(newest.nonce) ? a : newest),
                      undefined,
                    )
                    return (
                      <li key={`${c.token_address}-${c.partner_address}`} data-testid="guarded-channel">
                        {shared.nameOf(c.partner_address)} ({shared.tokenOf(c.token_address).symbol}):{' '}
                        {last
                          ? `newest proof (nonce ${last.nonce}) held by ${serviceName(last.service_address)} since ${new Date(last.acknowledged_at).toLocaleTimeString()}`
                          : `proof (nonce ${c.requested_nonce}) on its way to the services`}
                        {last && c.requested_nonce !== last.nonce ? `; nonce ${c.requested_nonce} on its way` : ''}
                      </li>
                    )
                  })}
                </ul>
              )}
            </dd>
          </>
        ) : null}
        {/* The off-browser backup (decision 0032) adds its row here: <dt>Backup</dt> and what the server holds. */}
      </dl>
      <Failure error={monitoring.error} shared={shared} />
    </Panel>
  )
}
