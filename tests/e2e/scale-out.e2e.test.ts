/** The scale-out suite (./scale-out.suite.ts) on the Temporal dev server. */
import { scaleOutSuite } from './scale-out.suite';

scaleOutSuite();
