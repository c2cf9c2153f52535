import type { Principal } from '@clinic/platform/core'
import { fileTypeMagic } from '../src/adapters/file-type'
import { uploadDocument } from '../src/domain/upload-document'
import { png } from './helpers'
import { FakeDocumentStore, FakePatients, FakeRecords, loggingCtxOf, partsOf } from './fakes'

/** uploadDocument on the fake stores: the parts as the route hands them over, as they stream. */
export function uploadWorld(principal: Partial<Principal> = {}, o: { maxBytes?: number } = {}) {
  const { ctx, lines } = loggingCtxOf(principal)
  const company = ctx.auth.companyId
  const store = new FakeDocumentStore()
  const content = store.content
  const patients = new FakePatients()
  const appointments = new FakeRecords()
  const exams = new FakeRecords()
  const patient = patients.add(company)
  const deps = { store, content, patients, appointments, exams, magic: fileTypeMagic }
  const send = (
    parts: ReturnType<typeof partsOf>,
    input: { key?: string; queryCenter?: string; as?: typeof ctx; path?: string; method?: string } = {},
  ) =>
    uploadDocument(input.as ?? ctx, deps, {
      parts,
      maxBytes: o.maxBytes ?? 1_000_000,
      queryCenter: input.queryCenter,
      idempotencyKey: input.key,
      method: input.method ?? 'POST',
      path: input.path ?? '/documents',
    })
  /** A PNG upload of the patient with these fields (category imaging unless told). */
  const upload = (
    fields: Record<string, string> = {},
    file: Parameters<typeof partsOf>[1] = { bytes: png(), filename: 'fondo.png' },
    input: Parameters<typeof send>[1] = {},
  ) => send(partsOf({ patient_id: patient, category: 'imaging', ...fields }, file), input)
  const states = () => [...content.uploads.values()].map((u) => u.state)
  return { ctx, lines, company, store, content, patients, appointments, exams, patient, send, upload, states }
}
