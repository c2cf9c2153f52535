import { AppError } from '@clinic/platform/core'

/** The documents and consents codes of DESIGN.md sections 3, 15 and 16. */

/** The bytes are none of the accepted types; `found` names what they are (never what the client said). */
export class UnsupportedFileType extends AppError {
  constructor(found: string) {
    super({
      status: 415,
      code: 'unsupported_media_type',
      title: 'Unsupported file type',
      detail: `the file's bytes are ${found}; accepted: PDF, JPEG, PNG, TIFF, WebP, HEIC, DICOM`,
      extensions: { found },
    })
  }
}

/** The file passed DOCUMENTS_MAX_BYTES: the upload was cut off there and nothing kept. */
export class FileTooLarge extends AppError {
  constructor(limit: number) {
    super({
      status: 413,
      code: 'payload_too_large',
      title: 'Payload too large',
      detail: `files are limited to ${limit} bytes`,
    })
  }
}

/** A multipart body that cannot be read as one (no boundary, truncated, a part too big). */
export class MalformedUpload extends AppError {
  constructor(detail: string) {
    super({
      status: 400,
      code: 'validation_failed',
      title: 'Request is not valid',
      detail,
      errors: [{ path: '', message: detail }],
    })
  }
}

export class DocumentDeleted extends AppError {
  constructor() {
    super({
      status: 410,
      code: 'document_deleted',
      title: 'Document deleted',
      detail: 'the document was deleted; its metadata stays on the trail',
    })
  }
}

/**
 * Evidence is never deleted (DESIGN.md section 16): a document a consent points to (its rendered
 * PDF, a scanned form) or of category `consent`.
 */
export class DocumentInUse extends AppError {
  constructor(detail: string) {
    super({ status: 409, code: 'document_in_use', title: 'Document in use', detail })
  }
}

/** An in-person grant names another signer role than the consent asks for. */
export class SignerMismatch extends AppError {
  constructor(expected: string, given: string) {
    super({
      status: 422,
      code: 'signer_mismatch',
      title: 'Signer mismatch',
      detail: `this consent is signed by its ${expected}, not by the ${given}`,
    })
  }
}

export class UnknownTemplate extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'unknown_template',
      title: 'Unknown consent template',
      detail: 'no consent template of this company has that key and language',
    })
  }
}

export class InvalidTransition extends AppError {
  constructor(detail: string) {
    super({ status: 409, code: 'invalid_transition', title: 'Invalid transition', detail })
  }
}

/** The range asked for is outside the content (RFC 9110 15.5.17). */
export class RangeNotSatisfiable extends AppError {
  constructor(size: number) {
    super({
      status: 416,
      code: 'range_not_satisfiable',
      title: 'Range not satisfiable',
      detail: `the content is ${size} bytes`,
      headers: { 'content-range': `bytes */${size}` },
    })
  }
}
