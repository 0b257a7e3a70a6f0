// A test process that builds a network and then dies without a word (test/network/hosts.test.ts kills it): it
// prints {"slot", "switchPid", "sleepPid"} once its network stands, with a process running in its first host.
import { createNetwork } from '../support/netns/network.ts'

const network = await createNetwork({ hosts: ['x', 'y'] })
const sleeper = network.hosts.x!.spawn('sleep', ['600'], { stdio: 'ignore' })
process.stdout.write(`${JSON.stringify({ slot: network.slot, switchPid: network.switchPid, sleepPid: sleeper.pid })}\n`)
setInterval(() => {}, 60_000)
