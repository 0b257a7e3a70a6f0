// The Sluice demo: a payment-channel node in this browser, embedded exactly as the README tells any dApp to
// (`sluice/browser`'s startNode, `sluice init`, fetch('/api/v1/...')), and every part of it to use by hand.
import { render } from 'preact'
import { App } from './app.tsx'
import { loadConfig } from './config.ts'
import { loadDeployment, loadSettleTimeoutMin, loadTokens } from './tokens.ts'
import './style.css'

const root = document.getElementById('app')!
async function boot() {
  const config = await loadConfig()
  const deployment = await loadDeployment(config)
  const [tokens, settleTimeoutMin] = await Promise.all([loadTokens(config, deployment), loadSettleTimeoutMin(config, deployment)])
  return { config, deployment, tokens, settleTimeoutMin }
}
boot().then(
  (loaded) => render(<App {...loaded} />, root),
  (e: Error) => render(<p class="failure">{e.message}</p>, root),
)
