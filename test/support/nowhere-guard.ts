import { BlockedDestinationError } from '../../src/net/addresses';
import { DestinationGuard } from '../../src/net/destination-guard';
import { PlatformPorts } from '../../src/net/platform-ports';

/** A guard that lets nothing out, before any DNS lookup: for fuzzing, whose URLs must reach no one. */
export class NowhereGuard extends DestinationGuard {
  constructor() {
    super({ allowPrivate: false, platformPorts: new PlatformPorts() });
  }

  override refusal(host: string): string {
    return `${host}: this test platform reaches no destination`;
  }

  override assertLiteral(url: URL): void {
    throw new BlockedDestinationError(this.refusal(url.hostname));
  }

  override async assertDestination(url: URL): Promise<void> {
    this.assertLiteral(url);
  }

  override lookup(): ReturnType<DestinationGuard['lookup']> {
    return (hostname, _options, callback) => callback(new BlockedDestinationError(this.refusal(hostname)), '');
  }
}
