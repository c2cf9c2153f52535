/** The clock comms runs by (COMMS_CLOCK_FILE): the platform's file clock. */
export { fileClock, parseOffset, type Clock } from '@clinic/platform'
