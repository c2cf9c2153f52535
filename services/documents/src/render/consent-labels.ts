/**
 * The consent PDF's own words, in the consent's language: Spanish, Catalan, Portuguese and English.
 * A language without labels here gets English ones (the text itself is always the template's, as
 * signed). "Representante legal" / "legal representative" fits any signer: no gendered word.
 */
export interface ConsentLabels {
  /** BCP 47 locale the dates are written in. */
  locale: string
  /** The clinic, when the consent does not know its name (consents asked before names were kept). */
  clinic: string
  template: string
  evidence: string
  consentId: string
  patient: string
  signer: string
  guardianOf: (patient: string) => string
  self: string
  nameOnFile: string
  none: string
  matches: string
  differs: string
  answer: string
  accepted: string
  declined: string
  signedAt: string
  method: string
  patientLink: string
  inPerson: string
  witness: string
  ip: string
  userAgent: string
  textSha: string
  attached: string
}

const LABELS: Record<'es' | 'ca' | 'pt' | 'en', ConsentLabels> = {
  es: {
    locale: 'es-ES',
    clinic: 'La clínica',
    template: 'Plantilla',
    evidence: 'Constancia de la firma',
    consentId: 'Consentimiento',
    patient: 'Paciente',
    signer: 'Firmante',
    guardianOf: (p) => `representante legal de ${p}`,
    self: 'en su propio nombre',
    nameOnFile: 'Nombre en la ficha',
    none: 'ninguno',
    matches: 'coincide con el nombre escrito',
    differs: 'NO coincide con el nombre escrito',
    answer: 'Respuesta',
    accepted: 'acepta',
    declined: 'no acepta',
    signedAt: 'Fecha y hora',
    method: 'Medio',
    patientLink: 'enlace enviado al firmante',
    inPerson: 'en persona, en la clínica',
    witness: 'Testigo',
    ip: 'Dirección IP',
    userAgent: 'Navegador',
    textSha: 'SHA-256 del texto',
    attached: 'El texto exacto va adjunto a este PDF (consent-text.txt, UTF-8); su SHA-256 es el indicado.',
  },
  ca: {
    locale: 'ca-ES',
    clinic: 'La clínica',
    template: 'Plantilla',
    evidence: 'Constància de la signatura',
    consentId: 'Consentiment',
    patient: 'Pacient',
    signer: 'Signant',
    guardianOf: (p) => `representant legal de ${p}`,
    self: 'en nom propi',
    nameOnFile: 'Nom a la fitxa',
    none: 'cap',
    matches: 'coincideix amb el nom escrit',
    differs: 'NO coincideix amb el nom escrit',
    answer: 'Resposta',
    accepted: 'accepta',
    declined: 'no accepta',
    signedAt: 'Data i hora',
    method: 'Mitjà',
    patientLink: 'enllaç enviat al signant',
    inPerson: 'en persona, a la clínica',
    witness: 'Testimoni',
    ip: 'Adreça IP',
    userAgent: 'Navegador',
    textSha: 'SHA-256 del text',
    attached: "El text exacte va adjunt a aquest PDF (consent-text.txt, UTF-8); el seu SHA-256 és l'indicat.",
  },
  pt: {
    locale: 'pt-PT',
    clinic: 'A clínica',
    template: 'Modelo',
    evidence: 'Registo da assinatura',
    consentId: 'Consentimento',
    patient: 'Paciente',
    signer: 'Signatário',
    guardianOf: (p) => `representante legal de ${p}`,
    self: 'em nome próprio',
    nameOnFile: 'Nome na ficha',
    none: 'nenhum',
    matches: 'coincide com o nome escrito',
    differs: 'NÃO coincide com o nome escrito',
    answer: 'Resposta',
    accepted: 'aceita',
    declined: 'não aceita',
    signedAt: 'Data e hora',
    method: 'Meio',
    patientLink: 'ligação enviada ao signatário',
    inPerson: 'presencialmente, na clínica',
    witness: 'Testemunha',
    ip: 'Endereço IP',
    userAgent: 'Navegador',
    textSha: 'SHA-256 do texto',
    attached: 'O texto exato vai anexo a este PDF (consent-text.txt, UTF-8); o seu SHA-256 é o indicado.',
  },
  en: {
    locale: 'en-GB',
    clinic: 'The clinic',
    template: 'Template',
    evidence: 'Evidence of signature',
    consentId: 'Consent',
    patient: 'Patient',
    signer: 'Signer',
    guardianOf: (p) => `legal representative of ${p}`,
    self: 'on their own behalf',
    nameOnFile: 'Name on file',
    none: 'none',
    matches: 'matches the name typed',
    differs: 'does NOT match the name typed',
    answer: 'Answer',
    accepted: 'accepts',
    declined: 'does not accept',
    signedAt: 'Date and time',
    method: 'Method',
    patientLink: 'link sent to the signer',
    inPerson: 'in person, at the clinic',
    witness: 'Witness',
    ip: 'IP address',
    userAgent: 'Browser',
    textSha: 'Text SHA-256',
    attached:
      'The exact text is attached to this PDF (consent-text.txt, UTF-8); its SHA-256 is the one above.',
  },
}

/** The labels of a BCP 47 language by its primary subtag (`pt-BR` -> pt); English otherwise. */
export function labelsFor(language: string): ConsentLabels {
  const primary = language.toLowerCase().split('-')[0]!
  return primary in LABELS ? LABELS[primary as keyof typeof LABELS] : LABELS.en
}
