import { getAddress, type Abi, type Address, type ContractConstructorArgs, type Hex } from 'viem'
import type { AnvilClient } from './clients.ts'

type Artifact<abi extends Abi> = { abi: abi; bytecode: Hex }

/** Deploys a compiled contract from src/contracts and waits for its address. */
export async function deploy<const abi extends Abi>(
  client: AnvilClient,
  artifact: Artifact<abi>,
  ...args: ContractConstructorArgs<abi> extends readonly [] ? [] : [ContractConstructorArgs<abi>]
): Promise<Address> {
  const hash = await client.deployContract({ abi: artifact.abi, bytecode: artifact.bytecode, args: args[0] } as never)
  const receipt = await client.waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success' || !receipt.contractAddress) throw new Error(`deploying failed (${receipt.status})`)
  return getAddress(receipt.contractAddress)
}
