import { GroupCommit } from '../../src/group-commit'

describe('GroupCommit', () => {
  it('writes what arrives during a write in the next batch, each submit getting its own result', async () => {
    const batches: number[][] = []
    let release: () => void = () => {}
    const commits = new GroupCommit<number, string>(async (batch) => {
      batches.push(batch)
      if (batches.length === 1) await new Promise<void>((r) => (release = r))
      return batch.map((n) => `#${n}`)
    }, 3)
    const first = commits.submit(1)
    const rest = [2, 3, 4, 5].map((n) => commits.submit(n))
    release()
    expect(await Promise.all([first, ...rest])).toEqual(['#1', '#2', '#3', '#4', '#5'])
    expect(batches).toEqual([[1], [2, 3, 4], [5]])
  })

  it('rejects every submit of a batch whose write failed, and goes on with the next', async () => {
    let n = 0
    const commits = new GroupCommit<number, number>(async (batch) => {
      if (n++ === 0) throw new Error('database away')
      return batch
    })
    await expect(commits.submit(1)).rejects.toThrow('database away')
    await expect(commits.submit(2)).resolves.toBe(2)
  })

  it('writes pushed items with the submitted ones, no promise each; idle() waits for every write', async () => {
    const batches: number[][] = []
    let release: () => void = () => {}
    const commits = new GroupCommit<number, number>(async (batch) => {
      batches.push(batch)
      if (batches.length === 1) await new Promise<void>((r) => (release = r))
      return batch
    })
    const first = commits.submit(1)
    commits.push([2, 3])
    const fourth = commits.submit(4)
    expect(commits.pending).toBe(3)
    const idle = commits.idle()
    release()
    await idle
    expect(batches).toEqual([[1], [2, 3, 4]])
    expect([commits.pending, await first, await fourth]).toEqual([0, 1, 4])
  })
})
