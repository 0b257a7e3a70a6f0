import { getAddress, type Abi, type Address, type ContractConstructorArgs } from 'viem'
import { bytecode } from '../../src/contracts/index.ts'
import type { AnvilClient } from './clients.ts'

/** A contract of src/contracts: its ABI, and its name to find its creation code by. */
type Artifact<abi extends Abi> = { contractName: keyof typeof bytecode; abi: abi }

/** Deploys a compiled contract from src/contracts and waits for its address. */
export async function deploy<const abi extends Abi>(
  client: AnvilClient,
  artifact: Artifact<abi>,
  ...args: ContractConstructorArgs<abi> extends readonly [] ? [] : [ContractConstructorArgs<abi>]
): Promise<Address> {
  const hash = await client.deployContract({ abi: artifact.abi, bytecode: bytecode[artifact.contractName], args: args[0] } as never)
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`deploying failed (${receipt.status})`)
  return getAddress(receipt.contractAddress)
}
