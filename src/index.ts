export * from './receiver';
