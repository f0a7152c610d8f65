export { withPostgres as default } from '../../vitest.shared';
