import { ArgumentMetadata, ValidationError, ValidationPipe, ValidationPipeOptions } from '@nestjs/common';
import { BadUserInputError } from '../shared/errors.js';
import { fastPlainToValidInstance } from './fast-validation.js';

/** class-validator on every input; the first failure becomes BAD_USER_INPUT naming the field. */
export function batonValidationPipe(): FastValidationPipe {
  return new FastValidationPipe(batonPipeOptions());
}

/** The same pipe without the compiled path: Nest's ValidationPipe as it is (for comparisons). */
export function classicValidationPipe(): ValidationPipe {
  return new ValidationPipe(batonPipeOptions());
}

function batonPipeOptions(): ValidationPipeOptions {
  return {
    transform: true,
    forbidUnknownValues: false,
    exceptionFactory: (errors: ValidationError[]) => {
      const [field, error] = firstFailure(errors, '');
      const reasons = Object.values(error?.constraints ?? {});
      return new BadUserInputError(field, reasons.join('; ') || 'is invalid');
    },
  };
}

/**
 * Nest's ValidationPipe, with the happy path compiled per input class (see fast-validation.ts): an
 * input that class-validator would accept is answered with the instance class-transformer would
 * build, without either library's per-call work. Everything else (invalid inputs, classes with rules
 * the compiled path does not reason about, scalars, custom decorators) goes through the original
 * pipe, so errors and results stay what they were.
 */
export class FastValidationPipe extends ValidationPipe {
  /** Validated inputs answered by the compiled path, and by the original pipe. */
  readonly counts = { fast: 0, fallback: 0 };
  private readonly compiled: boolean;

  constructor(options: ValidationPipeOptions) {
    super(options);
    // The compiled path is class-transformer's and class-validator's defaults, as batonPipeOptions sets them.
    const { forbidUnknownValues, ...otherValidatorOptions } = this.validatorOptions;
    this.compiled =
      this.isTransformEnabled &&
      this.expectedType === undefined &&
      this.transformOptions === undefined &&
      forbidUnknownValues === false &&
      Object.keys(otherValidatorOptions).length === 0;
  }

  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    if (this.compiled && metadata.metatype && this.toValidate(metadata)) {
      const instance = fastPlainToValidInstance(metadata.metatype, value);
      if (instance !== undefined) {
        this.counts.fast++;
        return instance;
      }
      this.counts.fallback++;
    }
    return super.transform(value, metadata);
  }
}

function firstFailure(errors: ValidationError[], prefix: string): [string, ValidationError | undefined] {
  for (const error of errors) {
    const path = prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints && Object.keys(error.constraints).length > 0) return [path, error];
    if (error.children?.length) return firstFailure(error.children, path);
  }
  return [prefix || 'input', undefined];
}
