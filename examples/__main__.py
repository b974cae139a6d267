"""All example stacks in one app, validated by the five cdk-nag packs (run by cdk.json)."""

import aws_cdk as cdk

from constructs_pkg import apply_nag_packs

from .bulk_load import BulkLoadStack
from .minimal_table import MinimalTableStack
from .orders_launch import OrdersLaunchStack
from .partner_import import PartnerImportStack
from .prime_time import PrimeTimeStack
from .settled_catalog import SettledCatalogStack
from .throttle_aware import ThrottleAwareStack


def build_app(**app_kwargs: object) -> cdk.App:
    """The example app; tests synthesize it in-process, ``cdk synth`` through cdk.json."""
    app = cdk.App(**app_kwargs)  # type: ignore[arg-type]
    apply_nag_packs(app)
    MinimalTableStack(app, "MinimalTable")
    OrdersLaunchStack(app, "OrdersLaunch")
    SettledCatalogStack(app, "SettledCatalog")
    BulkLoadStack(app, "BulkLoad")
    PrimeTimeStack(app, "PrimeTime")
    ThrottleAwareStack(app, "ThrottleAware")
    PartnerImportStack(app, "PartnerImport")
    return app


if __name__ == "__main__":
    build_app().synth()
