import {
  DocumentDeleted,
  DocumentInUse,
  FileTooLarge,
  InvalidTransition,
  MalformedUpload,
  RangeNotSatisfiable,
  SignerMismatch,
  UnknownTemplate,
  UnsupportedFileType,
} from '../../src/domain/errors'

/** The documents and consents problems as a client reads them (DESIGN.md sections 3, 15 and 16). */
describe('the documents errors', () => {
  it.each([
    [
      new UnsupportedFileType('image/svg+xml'),
      {
        status: 415,
        code: 'unsupported_media_type',
        title: 'Unsupported file type',
        detail: "the file's bytes are image/svg+xml; accepted: PDF, JPEG, PNG, TIFF, WebP, HEIC, DICOM",
        extensions: { found: 'image/svg+xml' },
      },
    ],
    [
      new FileTooLarge(1024),
      {
        status: 413,
        code: 'payload_too_large',
        title: 'Payload too large',
        detail: 'files are limited to 1024 bytes',
      },
    ],
    [
      new MalformedUpload('one file per upload'),
      {
        status: 400,
        code: 'validation_failed',
        title: 'Request is not valid',
        detail: 'one file per upload',
        errors: [{ path: '', message: 'one file per upload' }],
      },
    ],
    [
      new DocumentDeleted(),
      {
        status: 410,
        code: 'document_deleted',
        title: 'Document deleted',
        detail: 'the document was deleted; its metadata stays on the trail',
      },
    ],
    [
      new DocumentInUse('why'),
      { status: 409, code: 'document_in_use', title: 'Document in use', detail: 'why' },
    ],
    [
      new SignerMismatch('guardian', 'patient'),
      {
        status: 422,
        code: 'signer_mismatch',
        title: 'Signer mismatch',
        detail: 'this consent is signed by its guardian, not by the patient',
      },
    ],
    [
      new UnknownTemplate(),
      {
        status: 422,
        code: 'unknown_template',
        title: 'Unknown consent template',
        detail: 'no consent template of this company has that key and language',
      },
    ],
    [
      new InvalidTransition('the consent is granted'),
      {
        status: 409,
        code: 'invalid_transition',
        title: 'Invalid transition',
        detail: 'the consent is granted',
      },
    ],
    [
      new RangeNotSatisfiable(20),
      {
        status: 416,
        code: 'range_not_satisfiable',
        title: 'Range not satisfiable',
        detail: 'the content is 20 bytes',
        headers: { 'content-range': 'bytes */20' },
      },
    ],
  ])('%s', (error, problem) => {
    expect(error).toMatchObject(problem)
    expect(error).toBeInstanceOf(Error)
  })
})
