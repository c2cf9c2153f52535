import { SLOW_TEST_MS } from './client'

// Every e2e test and hook waits on the stack: a busy machine's pace, not a quiet one's. A test that
// needs longer says so itself.
jest.setTimeout(SLOW_TEST_MS)
