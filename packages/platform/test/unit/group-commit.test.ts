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

  it('with a linger: a lone item waits for others, a full batch goes at once, what came during a write goes right after', async () => {
    jest.useFakeTimers()
    try {
      const batches: number[][] = []
      let release: () => void = () => {}
      const commits = new GroupCommit<number, number>(
        async (batch) => {
          batches.push(batch)
          if (batches.length === 2) await new Promise<void>((r) => (release = r))
          return batch
        },
        3,
        20,
      )
      const lone = [commits.submit(1), commits.submit(2)]
      await jest.advanceTimersByTimeAsync(19)
      expect(batches).toEqual([])
      await jest.advanceTimersByTimeAsync(1)
      expect(await Promise.all(lone)).toEqual([1, 2])
      // Full: no linger. Held in its write, the next two wait for it and then go without one.
      const full = [3, 4, 5].map((n) => commits.submit(n))
      const during = [6, 7].map((n) => commits.submit(n))
      expect(batches).toEqual([
        [1, 2],
        [3, 4, 5],
      ])
      release()
      expect(await Promise.all([...full, ...during])).toEqual([3, 4, 5, 6, 7])
      expect(batches).toEqual([
        [1, 2],
        [3, 4, 5],
        [6, 7],
      ])
      // idle() sends a lingering batch now.
      const last = commits.submit(8)
      await commits.idle()
      expect([await last, batches.length]).toEqual([8, 4])
    } finally {
      jest.useRealTimers()
    }
  })
})
