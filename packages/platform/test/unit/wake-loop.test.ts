import { WakeLoop } from '../../src/wake-loop'

describe('WakeLoop', () => {
  it('runs one pass at a time: wakes during a pass make exactly one more, and none after stop', async () => {
    let passes = 0
    let running = 0
    let most = 0
    let release: () => void = () => {}
    const errors: unknown[] = []
    const loop = new WakeLoop({
      pass: async () => {
        passes++
        running++
        most = Math.max(most, running)
        if (passes === 1) await new Promise<void>((r) => (release = r))
        running--
        if (passes === 2) throw new Error('database away')
      },
      pollMs: 3_600_000,
      onError: (err) => errors.push(err),
    })
    loop.start()
    expect(loop.busy).toBe(true)
    for (let i = 0; i < 5; i++) loop.wake()
    release()
    await loop.settled()
    expect([passes, most, errors.length, loop.busy]).toEqual([2, 1, 1, false])
    loop.wake()
    await loop.settled()
    expect(passes).toBe(3)
    await loop.stop()
    loop.wake()
    expect([passes, loop.busy, loop.stopping]).toEqual([3, false, true])
  })

  it('with minIntervalMs, wakes within the interval make one pass when it is over; stop runs the one asked for', async () => {
    jest.useFakeTimers({ now: 1_000_000 })
    try {
      let passes = 0
      const loop = new WakeLoop({
        pass: async () => void passes++,
        pollMs: 3_600_000,
        onError: () => {},
        minIntervalMs: 20,
      })
      loop.start()
      await loop.settled()
      expect(passes).toBe(1)
      for (let i = 0; i < 5; i++) loop.wake()
      await Promise.resolve()
      expect([passes, loop.busy]).toEqual([1, true])
      await jest.advanceTimersByTimeAsync(20)
      expect([passes, loop.busy]).toEqual([2, false])
      loop.wake() // within the interval of the second pass
      await loop.stop()
      expect([passes, loop.busy]).toEqual([3, false])
    } finally {
      jest.useRealTimers()
    }
  })
})
