// The Sluice demo: a payment-channel node in this browser, embedded exactly as the README tells any dApp to
// (`sluice/browser`'s startNode, `sluice init`, fetch('/api/v1/...')), and every part of it to use by hand.
import { render } from 'preact'
import { App } from './app.tsx'
import { loadConfig } from './config.ts'
import './style.css'

const root = document.getElementById('app')!
loadConfig().then(
  (config) => render(<App config={config} />, root),
  (e: Error) => render(<p class="failure">{e.message}</p>, root),
)
