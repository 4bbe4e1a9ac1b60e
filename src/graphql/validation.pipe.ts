import { ValidationError, ValidationPipe } from '@nestjs/common';
import { BadUserInputError } from '../shared/errors.js';

/** class-validator on every input; the first failure becomes BAD_USER_INPUT naming the field. */
export function batonValidationPipe(): ValidationPipe {
  return new ValidationPipe({
    transform: true,
    forbidUnknownValues: false,
    exceptionFactory: (errors: ValidationError[]) => {
      const [field, error] = firstFailure(errors, '');
      const reasons = Object.values(error?.constraints ?? {});
      return new BadUserInputError(field, reasons.join('; ') || 'is invalid');
    },
  });
}

function firstFailure(errors: ValidationError[], prefix: string): [string, ValidationError | undefined] {
  for (const error of errors) {
    const path = prefix ? `${prefix}.${error.property}` : error.property;
    if (error.constraints && Object.keys(error.constraints).length > 0) return [path, error];
    if (error.children?.length) return firstFailure(error.children, path);
  }
  return [prefix || 'input', undefined];
}
